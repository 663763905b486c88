// SPDX-License-Identifier: BSD-2-Clause

package semclient_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"semd/semclient"
)

// benchAddr is $SEMD_BENCH_SERVER (bench/go-bench.sh: the daemon
// semd-benchmark measures too), else the tests' own daemon over UNIX.
func benchAddr() string {
	if a := os.Getenv("SEMD_BENCH_SERVER"); a != "" {
		return a
	}
	return shared.Unix
}

// BenchmarkAcquireRelease: one op = Acquire + Release of one permit of a
// name with a large limit (2 round trips), as semd-benchmark's down-up,
// by G goroutines on one Client, or by C Clients of one goroutine each.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, cfg := range []struct {
		name    string
		clients int
		gs      int
	}{{"G1", 1, 1}, {"G16", 1, 16}, {"C16", 16, 1}} {
		b.Run(cfg.name, func(b *testing.B) {
			ctx := context.Background()
			cs := make([]*semclient.Client, cfg.clients)
			for i := range cs {
				c, err := semclient.Dial(ctx, benchAddr())
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				cs[i] = c
			}
			name := fmt.Sprintf("go-bench-%d", time.Now().UnixNano())
			if err := cs[0].Create(ctx, name, 1000000000); err != nil {
				b.Fatal(err)
			}
			defer cs[0].Delete(ctx, name, true)
			workers := cfg.clients * cfg.gs
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			b.ResetTimer()
			t0 := time.Now()
			for w := 0; w < workers; w++ {
				n := b.N / workers
				if w < b.N%workers {
					n++
				}
				s := cs[w%cfg.clients].Semaphore(name)
				wg.Add(1)
				go func(n int) {
					defer wg.Done()
					for i := 0; i < n; i++ {
						p, err := s.Acquire(ctx, 1)
						if err == nil {
							err = p.Release()
						}
						if err != nil {
							errs <- err
							return
						}
					}
				}(n)
			}
			wg.Wait()
			el := time.Since(t0)
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/el.Seconds(), "ops/s")
		})
	}
}
