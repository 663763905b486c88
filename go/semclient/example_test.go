// SPDX-License-Identifier: BSD-2-Clause

package semclient_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"semd/semclient"
)

// Two workers share a limit of one across processes: the second waits
// until its context's deadline, and the first ties its work to its hold.
func Example() {
	ctx := context.Background()
	// "": $SEMD_SERVER, else unix:/run/semd/semd.sock
	c, err := semclient.Dial(ctx, "", semclient.WithLease(10*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	if err := c.Create(ctx, "example/db", 1, semclient.IfNotExists()); err != nil {
		fmt.Println(err)
		return
	}
	s := c.Semaphore("example/db")
	p, err := s.Acquire(ctx, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	work := p.Context(ctx) // cancelled if the hold is lost
	fmt.Println("holding; work cancelled:", work.Err() != nil)

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = s.Acquire(short, 1)
	fmt.Println("second acquire:", err)
	_, err = s.TryAcquire(1)
	fmt.Println("try:", errors.Is(err, semclient.ErrWouldBlock))

	if err := p.Release(); err != nil {
		fmt.Println(err)
	}
	fmt.Println("released; work cancelled:", work.Err() != nil)
	// Output:
	// holding; work cancelled: false
	// second acquire: context deadline exceeded
	// try: true
	// released; work cancelled: true
}
