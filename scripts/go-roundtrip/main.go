// Command go-roundtrip times google/pprof's profile.Parse followed by
// Profile.Write (gz -> parse -> gz) on one file, for scripts/bench-vs-go.sh.
//
// Usage: go-roundtrip FILE [ITERATIONS]
// Prints one line: ns_per_op=N bytes_out=N
package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/google/pprof/profile"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go-roundtrip FILE [ITERATIONS]")
		os.Exit(2)
	}
	input, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	iterations := 20
	if len(os.Args) > 2 {
		if iterations, err = strconv.Atoi(os.Args[2]); err != nil || iterations < 1 {
			fmt.Fprintln(os.Stderr, "ITERATIONS must be a positive integer")
			os.Exit(2)
		}
	}

	var out bytes.Buffer
	start := time.Now()
	for i := 0; i < iterations; i++ {
		p, err := profile.Parse(bytes.NewReader(input))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		out.Reset()
		if err := p.Write(&out); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	elapsed := time.Since(start)
	fmt.Printf("ns_per_op=%d bytes_out=%d\n", elapsed.Nanoseconds()/int64(iterations), out.Len())
}
