// SPDX-License-Identifier: BSD-2-Clause

package semclient_test

// Real semd daemons for the tests: the build tree's semd ($SEMD, else
// ../../build/normal/semd), on UNIX sockets in a temporary directory and
// TCP on 127.0.0.1, each killed when its test ends.

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// tbLike is what the helpers need of a testing.TB (TestMain has none).
type tbLike interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
}

// mainTB is TestMain's tbLike: fatal errors end the process, cleanups run
// after the tests.
type mainTB struct{ cleanups []func() }

func (m *mainTB) Helper()                   {}
func (m *mainTB) Fatal(args ...any)         { m.run(); log.Fatal(args...) }
func (m *mainTB) Fatalf(f string, a ...any) { m.run(); log.Fatalf(f, a...) }
func (m *mainTB) Logf(f string, a ...any)   { log.Printf(f, a...) }
func (m *mainTB) Cleanup(f func())          { m.cleanups = append(m.cleanups, f) }
func (m *mainTB) run() {
	for i := len(m.cleanups) - 1; i >= 0; i-- {
		m.cleanups[i]()
	}
	m.cleanups = nil
}

func semdPath() string {
	if p := os.Getenv("SEMD"); p != "" {
		return p
	}
	p, _ := filepath.Abs("../../build/normal/semd")
	return p
}

type daemon struct {
	args  []string
	cmd   *exec.Cmd
	dir   string
	ready string
	log   string
	Unix  string // unix:PATH
	TCP   string // tcp:127.0.0.1:PORT
	done  chan struct{}
}

// startSemd starts semd with args (besides its listeners and ready file)
// and waits for it to be ready.
func startSemd(tb tbLike, dir, name string, args ...string) *daemon {
	tb.Helper()
	d := &daemon{dir: dir, ready: filepath.Join(dir, name+".ready"), log: filepath.Join(dir, name+".log")}
	d.args = append([]string{"--ready-file", d.ready, "--acl", "anonymous * all"}, args...)
	d.start(tb)
	return d
}

// startSemdListen is startSemd with its own UNIX socket and a TCP port 0.
func startSemdListen(tb tbLike, dir, name string, args ...string) *daemon {
	tb.Helper()
	sock := filepath.Join(dir, name+".sock")
	return startSemd(tb, dir, name, append([]string{"--listen", "unix:" + sock,
		"--listen", "tcp:127.0.0.1:0"}, args...)...)
}

func (d *daemon) start(tb tbLike) {
	tb.Helper()
	os.Remove(d.ready)
	logf, err := os.OpenFile(d.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	d.cmd = exec.Command(semdPath(), d.args...)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	// a test binary killed by its timeout takes its daemons along
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		tb.Fatalf("start semd: %v", err)
	}
	logf.Close()
	d.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(d.cmd, d.done)
	tb.Cleanup(func() { d.stop(syscall.SIGKILL) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(d.ready)
		if err == nil && len(b) > 0 {
			sc := bufio.NewScanner(strings.NewReader(string(b)))
			for sc.Scan() {
				l := sc.Text()
				if strings.HasPrefix(l, "unix:") && d.Unix == "" {
					d.Unix = l
				}
				if strings.HasPrefix(l, "tcp:") && d.TCP == "" {
					d.TCP = l
				}
			}
			return
		}
		select {
		case <-d.done:
			b, _ := os.ReadFile(d.log)
			tb.Fatalf("semd exited before it was ready:\n%s", b)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(d.log)
			tb.Fatalf("semd not ready in 10 s:\n%s", b)
		}
	}
}

// stop signals the daemon and waits (at most 10 s, then SIGKILL).
func (d *daemon) stop(sig syscall.Signal) {
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}
	select {
	case <-d.done:
		return
	default:
	}
	_ = d.cmd.Process.Signal(sig)
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
}

func (d *daemon) signal(sig syscall.Signal) { _ = d.cmd.Process.Signal(sig) }

func (d *daemon) dumpLog(tb tbLike) {
	b, _ := os.ReadFile(d.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	tb.Logf("%s:\n%s", d.log, b)
}

// portBase returns the first of n consecutive TCP ports free on
// 127.0.0.1 now, chosen at random below the ephemeral range (as
// tests/lib.sh's t_port_base), for peers that must know each other's
// addresses before they start.
func portBase(tb tbLike, n int) int {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		fmt.Sscan(string(b), &lo)
	}
	if lo > 32768 {
		lo = 32768
	}
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	for i := 0; i < 200; i++ {
		base := 10000 + r.Intn(lo-n-10000)
		var ls []net.Listener
		ok := true
		for p := base; p < base+n; p++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if ok {
			return base
		}
	}
	tb.Fatal("no free block of ports")
	return 0
}

// waitFor polls cond every 10 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

func ctxT(tb tbLike, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}
