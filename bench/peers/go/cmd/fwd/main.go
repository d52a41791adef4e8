// Command fwd is the Go peer of canal's seed fwd program:
// <writers> writer goroutines -> 1 forwarder goroutine -> <readers> reader
// goroutines, over Go channels of capacity 256 carrying the seed's message
// (id, content[64]). Writers together send at most 30 000 messages; the
// forwarder forwards at most 15 000, then closes: since a send on a closed
// Go channel panics, the forwarder closes a done channel that the writers
// select on, and closes the output channel that the readers range over.
// Prints only "Working..." and "End of program".
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
)

const (
	total      = 30000
	forwardMax = 15000
	capacity   = 256
)

type msg struct {
	id      int32
	content [64]byte
}

func fill(m *msg, id int, seq int) {
	m.id = int32(id)
	for i := 0; i < 8; i++ {
		m.content[i] = byte(seq >> (8 * i))
	}
	c := byte('a' + id%26)
	for i := 8; i < len(m.content); i++ {
		m.content[i] = c
	}
}

func check(m *msg) bool {
	return m.id >= 0 && m.content[8] == byte('a'+m.id%26)
}

func count(s, what string) int {
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 || v > 1000000 {
		fmt.Fprintf(os.Stderr, "fwd-go: bad %s count %q (1..1000000)\n", what, s)
		os.Exit(1)
	}
	return v
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: fwd-go <writers> <readers>")
		os.Exit(1)
	}
	nw := count(os.Args[1], "writer")
	nr := count(os.Args[2], "reader")
	fmt.Println("Working...")

	in := make(chan msg, capacity)
	out := make(chan msg, capacity)
	done := make(chan struct{})
	var received, bad atomic.Int64
	var forwarded int64

	var readers, writers, fwd sync.WaitGroup
	readers.Add(nr)
	for i := 0; i < nr; i++ {
		go func() {
			defer readers.Done()
			var got, wrong int64
			for m := range out {
				if !check(&m) {
					wrong++
				}
				got++
			}
			received.Add(got)
			bad.Add(wrong)
		}()
	}
	fwd.Add(1)
	go func() {
		defer fwd.Done()
		for forwarded < forwardMax {
			m, ok := <-in
			if !ok {
				break // every writer finished
			}
			out <- m
			forwarded++
		}
		close(done)
		close(out)
	}()
	writers.Add(nw)
	for i := 0; i < nw; i++ {
		go func(id int) {
			defer writers.Done()
			quota := total / nw
			if id < total%nw {
				quota++
			}
			var m msg
			for k := 0; k < quota; k++ {
				fill(&m, id, k)
				select {
				case in <- m:
				case <-done:
					return // the forwarder closed: stop
				}
			}
		}(i)
	}
	writers.Wait()
	close(in) // nobody sends any more
	fwd.Wait()
	readers.Wait()
	if bad.Load() != 0 || received.Load() != forwarded {
		fmt.Fprintf(os.Stderr, "fwd-go: forwarded %d, received %d, %d corrupted\n",
			forwarded, received.Load(), bad.Load())
		os.Exit(1)
	}
	fmt.Println("End of program")
}
