// Command chanbench is canal's channel benchmark, Go peer: Go's built-in
// channels on the same workloads as bench/chan/chanbench-canal.c and the
// Rust peers (bench/peers/rust); see docs/bench-chan.md. One line per
// result, in crossbeam-channel's benchmark format:
//
//	bounded1_spsc Go chan 0.123456 sec
//
// Usage: chanbench [-n N] [-t T] [-s 0|8|64] [-w KIND,..] [-c 0,1,N]
//
// Go has no unbounded channel, so capacity u is not accepted.
package main

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"
)

// msg is the set of message types: 0, 8 and 64 bytes.
type msg interface {
	struct{} | [1]uint64 | [8]uint64
}

func newMsg[M msg](i int) M {
	var m M
	switch p := any(&m).(type) {
	case *[1]uint64:
		p[0] = uint64(i)
	case *[8]uint64:
		for k := range p {
			p[k] = uint64(i)
		}
	}
	return m
}

// kinds are the workload kinds, in output order.
var kinds = []string{"seq", "spsc", "mpsc", "mpmc", "select_rx", "select_both", "ping_pong"}

type config struct {
	n, t, size int
	kinds      []string
	caps       []string // "0", "1", "N"
}

// capacity returns the channel capacity of a cap flag value.
func (c *config) capacity(capFlag string) int {
	switch capFlag {
	case "0":
		return 0
	case "1":
		return 1
	}
	return c.n
}

// seq: one thread sends a chunk of min(capacity, N) messages, then receives
// them, until N messages went through. Impossible at capacity 0.
func seq[M msg](capacity, n int) {
	ch := make(chan M, capacity)
	chunk := min(capacity, n)
	for done := 0; done < n; {
		k := min(chunk, n-done)
		for i := 0; i < k; i++ {
			ch <- newMsg[M](done + i)
		}
		for i := 0; i < k; i++ {
			<-ch
		}
		done += k
	}
}

func spsc[M msg](capacity, n int) {
	ch := make(chan M, capacity)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			ch <- newMsg[M](i)
		}
	}()
	for i := 0; i < n; i++ {
		<-ch
	}
	wg.Wait()
}

func mpsc[M msg](capacity, n, t int) {
	ch := make(chan M, capacity)
	per := n / t
	var wg sync.WaitGroup
	for s := 0; s < t; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				ch <- newMsg[M](i)
			}
		}()
	}
	for i := 0; i < per*t; i++ {
		<-ch
	}
	wg.Wait()
}

func mpmc[M msg](capacity, n, t int) {
	ch := make(chan M, capacity)
	per := n / t
	var wg sync.WaitGroup
	for s := 0; s < t; s++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				ch <- newMsg[M](i)
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				<-ch
			}
		}()
	}
	wg.Wait()
}

// selectRecv receives count messages, each from whichever channel of chs is
// ready. A select statement needs its cases at compile time: the common
// case of 4 channels is a plain select, any other count goes through
// reflect.Select (its cases built once).
func selectRecv[M msg](chs []chan M, count int) {
	if len(chs) == 4 {
		c0, c1, c2, c3 := chs[0], chs[1], chs[2], chs[3]
		for i := 0; i < count; i++ {
			select {
			case <-c0:
			case <-c1:
			case <-c2:
			case <-c3:
			}
		}
		return
	}
	cases := make([]reflect.SelectCase, len(chs))
	for k, ch := range chs {
		cases[k] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)}
	}
	for i := 0; i < count; i++ {
		if _, _, ok := reflect.Select(cases); !ok {
			panic("receive on a closed channel")
		}
	}
}

// selectSend sends count messages, each on whichever channel of chs is
// ready; as selectRecv, a select statement for 4 channels, else reflect.
func selectSend[M msg](chs []chan M, count int) {
	if len(chs) == 4 {
		c0, c1, c2, c3 := chs[0], chs[1], chs[2], chs[3]
		for i := 0; i < count; i++ {
			m := newMsg[M](i)
			select {
			case c0 <- m:
			case c1 <- m:
			case c2 <- m:
			case c3 <- m:
			}
		}
		return
	}
	cases := make([]reflect.SelectCase, len(chs))
	for k, ch := range chs {
		cases[k] = reflect.SelectCase{Dir: reflect.SelectSend, Chan: reflect.ValueOf(ch)}
	}
	for i := 0; i < count; i++ {
		v := reflect.ValueOf(newMsg[M](i))
		for k := range cases {
			cases[k].Send = v
		}
		reflect.Select(cases)
	}
}

func makeChans[M msg](capacity, t int) []chan M {
	chs := make([]chan M, t)
	for k := range chs {
		chs[k] = make(chan M, capacity)
	}
	return chs
}

func selectRx[M msg](capacity, n, t int) {
	chs := makeChans[M](capacity, t)
	per := n / t
	var wg sync.WaitGroup
	for _, ch := range chs {
		wg.Add(1)
		go func(ch chan M) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				ch <- newMsg[M](i)
			}
		}(ch)
	}
	selectRecv(chs, per*t)
	wg.Wait()
}

func selectBoth[M msg](capacity, n, t int) {
	chs := makeChans[M](capacity, t)
	per := n / t
	var wg sync.WaitGroup
	for s := 0; s < t; s++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			selectSend(chs, per)
		}()
		go func() {
			defer wg.Done()
			selectRecv(chs, per)
		}()
	}
	wg.Wait()
}

// pingPong: N/2 round trips between two goroutines (N messages in all).
func pingPong[M msg](capacity, n int) {
	ping := make(chan M, capacity)
	pong := make(chan M, capacity)
	rounds := n / 2
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			pong <- <-ping
		}
	}()
	for i := 0; i < rounds; i++ {
		ping <- newMsg[M](i)
		<-pong
	}
	wg.Wait()
}

func capName(capFlag string) string {
	return "bounded" + capFlag
}

func runOne[M msg](cfg *config, kind, capFlag string) {
	if kind == "seq" && capFlag == "0" {
		return // a single goroutine cannot rendezvous with itself
	}
	c, n, t := cfg.capacity(capFlag), cfg.n, cfg.t
	start := time.Now()
	switch kind {
	case "seq":
		seq[M](c, n)
	case "spsc":
		spsc[M](c, n)
	case "mpsc":
		mpsc[M](c, n, t)
	case "mpmc":
		mpmc[M](c, n, t)
	case "select_rx":
		selectRx[M](c, n, t)
	case "select_both":
		selectBoth[M](c, n, t)
	case "ping_pong":
		pingPong[M](c, n)
	}
	secs := time.Since(start).Seconds()
	suffix := ""
	if cfg.size != 8 {
		suffix = fmt.Sprintf("_%dB", cfg.size)
	}
	fmt.Printf("%s_%s%s Go chan %.6f sec\n", capName(capFlag), kind, suffix, secs)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "chanbench: "+format+"\n", args...)
	flag.Usage()
	os.Exit(2)
}

func main() {
	cfg := &config{}
	flag.IntVar(&cfg.n, "n", 1000000, "messages per workload")
	flag.IntVar(&cfg.t, "t", 4, "threads (senders, receivers, channels)")
	flag.IntVar(&cfg.size, "s", 8, "message size in bytes: 0, 8 or 64")
	w := flag.String("w", strings.Join(kinds, ","), "workload kinds, comma-separated")
	c := flag.String("c", "0,1,N", "capacities: 0, 1, N (Go has no unbounded channel)")
	flag.Parse()
	cfg.kinds = strings.Split(*w, ",")
	cfg.caps = strings.Split(*c, ",")
	if cfg.n < 2 || cfg.t < 1 || cfg.n < cfg.t {
		fail("need N >= 2, T >= 1 and N >= T")
	}
	if cfg.size != 0 && cfg.size != 8 && cfg.size != 64 {
		fail("message size must be 0, 8 or 64")
	}
	for _, k := range cfg.kinds {
		if !contains(kinds, k) {
			fail("unknown workload %q", k)
		}
	}
	for _, cf := range cfg.caps {
		if cf == "u" {
			continue // no unbounded channel in Go: nothing to print
		}
		if cf != "0" && cf != "1" && cf != "N" {
			fail("bad capacity %q", cf)
		}
	}
	for _, kind := range kinds {
		if !contains(cfg.kinds, kind) {
			continue
		}
		for _, cf := range cfg.caps {
			if cf == "u" {
				continue
			}
			switch cfg.size {
			case 0:
				runOne[struct{}](cfg, kind, cf)
			case 8:
				runOne[[1]uint64](cfg, kind, cf)
			default:
				runOne[[8]uint64](cfg, kind, cf)
			}
		}
	}
}
