// SPDX-License-Identifier: BSD-2-Clause

// Command go-etcd measures acquire+release with etcd's own Go client
// (clientv3, GOPATH mode against Debian's golang-etcd-server-dev), the
// anchor that bench/go-bench.sh puts beside the Go package semclient on
// semd's 3-node cluster. G goroutines share one client; each runs
// acquire+release in a closed loop for the measured time:
//
//	-mode txn    a counting semaphore as an etcd user writes it without a
//	             server-side script: slot keys KEY/s, acquire = one Txn
//	             "if create_revision(KEY/s) == 0 then put KEY/s" (goroutine
//	             i starts at slot i, so nobody is refused while the limit is
//	             at least G), release = delete KEY/s. Two raft writes an op,
//	             as semd's down and up.
//	-mode mutex  the idiom of clientv3/concurrency: Lock and Unlock of a
//	             Mutex of one Session (lease kept alive), one key per
//	             goroutine (uncontended, as semd's large limit).
//
// It prints one line of key=value pairs: ops, ops_s, p50_us, p99_us.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
)

func main() {
	endpoints := flag.String("endpoints", "127.0.0.1:2379", "etcd client endpoints, comma-separated")
	g := flag.Int("g", 1, "goroutines")
	d := flag.Duration("d", 3*time.Second, "measured time")
	warm := flag.Duration("warm", 500*time.Millisecond, "warm-up, not measured")
	mode := flag.String("mode", "txn", "txn or mutex")
	key := flag.String("key", "gobench", "key prefix")
	flag.Parse()
	if *g < 1 || *g > 4096 || (*mode != "txn" && *mode != "mutex") {
		fmt.Fprintln(os.Stderr, "go-etcd: -g 1..4096, -mode txn|mutex")
		os.Exit(2)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   strings.Split(*endpoints, ","),
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-etcd:", err)
		os.Exit(1)
	}
	defer cli.Close()
	var sess *concurrency.Session
	if *mode == "mutex" {
		if sess, err = concurrency.NewSession(cli, concurrency.WithTTL(10)); err != nil {
			fmt.Fprintln(os.Stderr, "go-etcd: session:", err)
			os.Exit(1)
		}
		defer sess.Close()
	}
	ctx := context.Background()
	start := time.Now()
	measureFrom := start.Add(*warm)
	end := measureFrom.Add(*d)
	lat := make([][]time.Duration, *g)
	errs := make(chan error, *g)
	var wg sync.WaitGroup
	for i := 0; i < *g; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var op func() error
			if *mode == "txn" {
				k := fmt.Sprintf("%s/%d", *key, i)
				op = func() error {
					r, err := cli.Txn(ctx).
						If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
						Then(clientv3.OpPut(k, "held")).Commit()
					if err != nil {
						return err
					}
					if !r.Succeeded {
						return fmt.Errorf("slot %s taken", k)
					}
					_, err = cli.Delete(ctx, k)
					return err
				}
			} else {
				m := concurrency.NewMutex(sess, fmt.Sprintf("%s-m/%d", *key, i))
				op = func() error {
					if err := m.Lock(ctx); err != nil {
						return err
					}
					return m.Unlock(ctx)
				}
			}
			for {
				t0 := time.Now()
				if t0.After(end) {
					return
				}
				if err := op(); err != nil {
					errs <- err
					return
				}
				if t0.After(measureFrom) {
					lat[i] = append(lat[i], time.Since(t0))
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		fmt.Fprintln(os.Stderr, "go-etcd:", err)
		os.Exit(1)
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	if len(all) == 0 {
		fmt.Fprintln(os.Stderr, "go-etcd: no op completed")
		os.Exit(1)
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	fmt.Printf("ops=%d ops_s=%.0f p50_us=%d p99_us=%d\n", len(all),
		float64(len(all))/d.Seconds(), all[len(all)/2].Microseconds(),
		all[len(all)*99/100].Microseconds())
}
