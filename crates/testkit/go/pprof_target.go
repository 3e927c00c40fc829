// A Go program to profile: serves net/http/pprof on a loopback address
// and does work in named functions only when asked, so that a test knows
// exactly what happened between two scrapes. Standard library only.
//
//	pprof-target -listen 127.0.0.1:0
//
// prints the address it listens on as its first line on stdout (and
// nothing else there), then serves
//
//	/debug/pprof/...                 net/http/pprof
//	POST /work/alloc?n=N&size=S      N allocations of S bytes in main.allocateForTest, then dropped
//	POST /work/retain?n=N            N blocks of 64 bytes in main.retainForTest, kept for good
//	POST /work/mutex?n=N             N contentions in main.contendForTest
//	POST /work/block?n=N             N blocking channel receives in main.blockForTest
//	POST /work/cpu?ms=M              M milliseconds of CPU in main.burnForTest
//
// A work request answers 200 only when the work is done and visible in
// the profiles (see finishWork); one runs at a time.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Every allocation is recorded, not one per 512 KiB on average, so that
// the heap and allocs profiles count allocations exactly, unscaled. Set
// before anything else runs, as runtime.MemProfileRate asks.
func init() { runtime.MemProfileRate = 1 }

var (
	// Where allocateForTest's allocations escape to, so that the compiler
	// keeps them on the heap.
	sink []byte
	// What retainForTest keeps alive, newest first.
	retained *retainedBlock
	// burnForTest's result, so that its loop is not optimized away.
	burnt uint64
	// One work request at a time: contendForTest recognizes its helper
	// goroutine by name.
	workMu sync.Mutex
)

// 64 bytes, a size class of its own: one allocation per retained block.
type retainedBlock struct {
	previous *retainedBlock
	pad      [56]byte
}

//go:noinline
func allocateForTest(n, size int) {
	for i := 0; i < n; i++ {
		sink = make([]byte, size)
	}
	sink = nil
}

//go:noinline
func retainForTest(n int) {
	for i := 0; i < n; i++ {
		retained = &retainedBlock{previous: retained}
	}
}

// Each round, contendForTest holds a fresh mutex, starts lockWaiter on it,
// waits until lockWaiter sleeps in Lock, then unlocks: the unlock wakes a
// sleeping waiter, which is what the mutex profile counts (one contention,
// on contendForTest's stack) and what the block profile counts on the
// waiter's side (one event, on lockWaiter's stack). contendForTest never
// blocks itself: it polls.
//
//go:noinline
func contendForTest(n int) {
	var finished int64
	for i := 0; i < n; i++ {
		mu := new(sync.Mutex)
		mu.Lock()
		go lockWaiter(mu, &finished)
		for !lockWaiterSleeps() {
			time.Sleep(20 * time.Microsecond)
		}
		mu.Unlock()
	}
	for atomic.LoadInt64(&finished) < int64(n) {
		time.Sleep(20 * time.Microsecond)
	}
}

//go:noinline
func lockWaiter(mu *sync.Mutex, finished *int64) {
	mu.Lock()
	mu.Unlock()
	atomic.AddInt64(finished, 1)
}

// Whether a goroutine sleeps in sync.Mutex.Lock called by lockWaiter: its
// state is "semacquire" (Go 1.19) or "sync.Mutex.Lock" (Go 1.20 and later).
// runtime.Stack stops the world, so the state is not half changed.
func lockWaiterSleeps() bool {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, stack, _ := strings.Cut(g, "\n")
		_, state, _ := strings.Cut(header, " [")
		sleeping := strings.HasPrefix(state, "semacquire") || strings.HasPrefix(state, "sync.Mutex.Lock")
		if sleeping && strings.Contains(stack, "sync.(*Mutex).Lock") && strings.Contains(stack, "main.lockWaiter(") {
			return true
		}
	}
	return false
}

// blockForTest receives n times from a channel that blockReleaser sends on
// only when a receiver is already waiting (a send that does not block on
// an unbuffered channel finds a waiting receiver): each receive sleeps,
// which is what the block profile counts.
//
//go:noinline
func blockForTest(n int) {
	ch := make(chan struct{})
	go blockReleaser(ch, n)
	for i := 0; i < n; i++ {
		<-ch
	}
}

func blockReleaser(ch chan struct{}, n int) {
	for i := 0; i < n; {
		select {
		case ch <- struct{}{}:
			i++
		default:
			time.Sleep(20 * time.Microsecond)
		}
	}
}

//go:noinline
func burnForTest(d time.Duration) {
	x := burnt
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		for i := 0; i < 100000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	burnt = x
}

// finishWork makes the work just done visible in every profile. Mutex and
// block events are recorded when they happen, but the heap and allocs
// profiles are not: runtime.MemProfile "may be up to two garbage
// collection cycles old", because an allocation is published only once
// the cycle in which it could have been freed is swept. Two complete
// cycles after the work (runtime.GC returns once its cycle is swept)
// publish every allocation the work made, and every free of what it
// dropped. (Go 1.19's runtime.GC publishes them after one cycle already,
// but that is its implementation, not its documentation.)
func finishWork() {
	runtime.GC()
	runtime.GC()
}

// serveWork answers a POST whose query has a positive integer for each of
// params by running run on them, then finishWork.
func serveWork(params []string, run func(args []int)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		args := make([]int, len(params))
		for i, name := range params {
			v, err := strconv.Atoi(r.URL.Query().Get(name))
			if err != nil || v < 1 {
				http.Error(w, name+" must be a positive integer", http.StatusBadRequest)
				return
			}
			args[i] = v
		}
		workMu.Lock()
		defer workMu.Unlock()
		run(args)
		finishWork()
		fmt.Fprintln(w, "done")
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "the loopback address to serve on")
	flag.Parse()
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	http.HandleFunc("/work/alloc", serveWork([]string{"n", "size"}, func(a []int) { allocateForTest(a[0], a[1]) }))
	http.HandleFunc("/work/retain", serveWork([]string{"n"}, func(a []int) { retainForTest(a[0]) }))
	http.HandleFunc("/work/mutex", serveWork([]string{"n"}, func(a []int) { contendForTest(a[0]) }))
	http.HandleFunc("/work/block", serveWork([]string{"n"}, func(a []int) { blockForTest(a[0]) }))
	http.HandleFunc("/work/cpu", serveWork([]string{"ms"}, func(a []int) { burnForTest(time.Duration(a[0]) * time.Millisecond) }))
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pprof-target:", err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	fmt.Fprintln(os.Stderr, "pprof-target:", http.Serve(ln, nil))
	os.Exit(1)
}
