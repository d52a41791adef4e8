// Command webserver is the Go peer of canal's web servers (issue 14): a
// net/http static file server as its users write one, http.FileServer
// over --root, with the same command line as bench/web/<style>:
//
//	webserver --port P --root DIR --cores N [--bind ADDR]
//
// GOMAXPROCS is set to N. Timeouts as a production net/http server sets
// them, matching canal's servers: 10 s to read a request's header, 60 s
// idle keep-alive. Prints "web go: listening on ADDR:PORT" once it
// accepts (--port 0 picks a port) and exits 0 on SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

func main() {
	port := flag.Int("port", -1, "TCP port (0: any)")
	root := flag.String("root", "", "directory to serve")
	cores := flag.Int("cores", 1, "GOMAXPROCS")
	bind := flag.String("bind", "127.0.0.1", "IPv4 address")
	flag.Parse()
	if *port < 0 || *root == "" || *cores < 1 {
		flag.Usage()
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*cores)
	ln, err := net.Listen("tcp4", fmt.Sprintf("%s:%d", *bind, *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "web go:", err)
		os.Exit(1)
	}
	srv := &http.Server{
		Handler:           http.FileServer(http.Dir(*root)),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
	fmt.Printf("web go: listening on %s:%d\n", *bind, ln.Addr().(*net.TCPAddr).Port)
	os.Stdout.Sync()
	done := make(chan struct{})
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		close(done)
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "web go:", err)
		os.Exit(1)
	}
	<-done
}
