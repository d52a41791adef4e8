// Command runtimebench is the Go peer of canal's task runtime benchmark
// (bench/runtime/canal-runtime-bench.c): the same workloads with
// goroutines, one line per result in the same format:
//
//	yield_pingpong 85.2 ns/switch
//
// yield_pingpong: two goroutines alternate with runtime.Gosched
// (GOMAXPROCS=1); spawn_join: start a goroutine and wait for its end
// (sync.WaitGroup), one P; cond_pingpong: sync.Cond round trip, one P;
// chan_pingpong_1loop_C / _2loops_C: an unbuffered (C=0) or capacity-1
// channel round trip with GOMAXPROCS 1 / 2; sock_pingpong_recv: 8 bytes
// there and back between two goroutines over a TCP loopback pair through
// Go's net package (its netpoller), one P, rounds / 4 round trips;
// parked_bytes_N: resident bytes per goroutine parked on a channel
// receive (RSS delta / N).
//
// Usage: runtimebench [rounds] (default 200000); CANAL_RB_PARKED=N.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

var rounds = 200000

func yieldPingPong() {
	runtime.GOMAXPROCS(1)
	var wg sync.WaitGroup
	t0 := time.Now()
	for k := 0; k < 2; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	fmt.Printf("yield_pingpong %.1f ns/switch\n", float64(time.Since(t0).Nanoseconds())/float64(2*rounds))
}

func spawnJoin() {
	runtime.GOMAXPROCS(1)
	t0 := time.Now()
	for i := 0; i < rounds; i++ {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { wg.Done() }()
		wg.Wait()
	}
	fmt.Printf("spawn_join %.1f ns/task\n", float64(time.Since(t0).Nanoseconds())/float64(rounds))
}

func condPingPong() {
	runtime.GOMAXPROCS(1)
	var mu sync.Mutex
	ping, pong := sync.NewCond(&mu), sync.NewCond(&mu)
	turn := 0
	done := make(chan struct{})
	t0 := time.Now()
	go func() {
		mu.Lock()
		for i := 0; i < rounds; i++ {
			for turn != 2*i+1 {
				ping.Wait()
			}
			turn = 2*i + 2
			pong.Signal()
		}
		mu.Unlock()
		close(done)
	}()
	mu.Lock()
	for i := 0; i < rounds; i++ {
		turn = 2*i + 1
		ping.Signal()
		for turn != 2*i+2 {
			pong.Wait()
		}
	}
	mu.Unlock()
	<-done
	fmt.Printf("cond_pingpong %.1f ns/rt\n", float64(time.Since(t0).Nanoseconds())/float64(rounds))
}

func chanPingPong(capacity, procs int) {
	runtime.GOMAXPROCS(procs)
	a, b := make(chan int, capacity), make(chan int, capacity)
	t0 := time.Now()
	go func() {
		for i := 0; i < rounds; i++ {
			v := <-a
			b <- v
		}
	}()
	for i := 0; i < rounds; i++ {
		a <- i
		<-b
	}
	name := "1loop"
	if procs > 1 {
		name = "2loops"
	}
	fmt.Printf("chan_pingpong_%s_%d %.1f ns/rt\n", name, capacity, float64(time.Since(t0).Nanoseconds())/float64(rounds))
}

// tcpPair: the two ends of a TCP connection on loopback (Go sets
// TCP_NODELAY by default), as canal's socket ping-pong uses.
func tcpPair() (net.Conn, net.Conn) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	a, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		panic(err)
	}
	b, err := l.Accept()
	if err != nil {
		panic(err)
	}
	return a, b
}

func sockPingPong() {
	runtime.GOMAXPROCS(1)
	a, b := tcpPair()
	n := rounds / 4
	done := make(chan struct{})
	t0 := time.Now()
	go func() {
		buf := make([]byte, 8)
		for i := 0; i < n; i++ {
			if _, err := io.ReadFull(b, buf); err != nil {
				panic(err)
			}
			if _, err := b.Write(buf); err != nil {
				panic(err)
			}
		}
		close(done)
	}()
	buf := []byte("pingpong")
	for i := 0; i < n; i++ {
		if _, err := a.Write(buf); err != nil {
			panic(err)
		}
		if _, err := io.ReadFull(a, buf); err != nil {
			panic(err)
		}
	}
	<-done
	fmt.Printf("sock_pingpong_recv %.1f ns/rt\n", float64(time.Since(t0).Nanoseconds())/float64(n))
	a.Close()
	b.Close()
}

func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func parked(n int) {
	runtime.GOMAXPROCS(runtime.NumCPU())
	ch := make(chan struct{})
	var wg sync.WaitGroup
	runtime.GC()
	before := rssBytes()
	wg.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			wg.Done()
			<-ch
		}()
	}
	wg.Wait()
	// Steady state (canal's bench uses the same rule): resident memory
	// moved by less than 1 % in 100 ms, at most 5 s.
	prev := rssBytes()
	after := prev
	for i := 0; i < 50; i++ {
		time.Sleep(100 * time.Millisecond)
		after = rssBytes()
		d := after - prev
		if d < 0 {
			d = -d
		}
		if d*100 < prev {
			break
		}
		prev = after
	}
	close(ch)
	fmt.Printf("parked_bytes_%d %.0f bytes/task\n", n, float64(after-before)/float64(n))
}

func main() {
	if len(os.Args) > 1 {
		if n, err := strconv.Atoi(os.Args[1]); err == nil {
			rounds = n
		}
	}
	yieldPingPong()
	spawnJoin()
	condPingPong()
	for _, c := range []int{0, 1} {
		chanPingPong(c, 1)
		chanPingPong(c, 2)
	}
	sockPingPong()
	n := 100000
	if s := os.Getenv("CANAL_RB_PARKED"); s != "" {
		if v, err := strconv.Atoi(s); err == nil {
			n = v
		}
	}
	parked(n)
}
