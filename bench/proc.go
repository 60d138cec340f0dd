package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a server process the harness started.
type proc struct {
	name     string
	cmd      *exec.Cmd
	httpAddr string // host:port, "" when it serves no HTTP
	grpcAddr string // host:port, "" when it serves no gRPC
	startup  time.Duration
	exited   chan struct{} // closed when the process has ended
	waitErr  error
}

func (p *proc) httpBase() string { return "http://" + p.httpAddr }

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startProc starts name with args and waits until it serves: /healthz answers 200 on
// httpAddr when there is one, else grpcAddr accepts a connection. The start-up time
// runs from just before the exec to the first good answer. The server's log goes to
// stderr when verbose is set and is dropped otherwise: the service logs every request,
// and a pipe the harness drains would cost CPU on the cores the measurement shares.
func startProc(ctx context.Context, name string, argv []string, httpAddr, grpcAddr string, verbose bool) (*proc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	if verbose {
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	}
	p := &proc{name: name, cmd: cmd, httpAddr: httpAddr, grpcAddr: grpcAddr, exited: make(chan struct{})}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	ready := func() bool {
		if httpAddr != "" {
			resp, err := hc.Get("http://" + httpAddr + "/healthz")
			if err != nil {
				return false
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}
		c, err := net.DialTimeout("tcp", grpcAddr, time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
	deadline := time.After(2 * time.Minute)
	for !ready() {
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%s exited before serving (%v); rerun with -v to see its log", name, p.waitErr)
		case <-deadline:
			p.stop()
			return nil, fmt.Errorf("%s did not serve within 2 minutes", name)
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	p.startup = time.Since(t0)
	return p, nil
}

// stop asks the process to end (SIGTERM) and kills it if it has not within 15 s.
func (p *proc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// kill ends the process at once (SIGKILL) and waits for it: the hostile check's
// guard uses it when the service's memory passes the ceiling, where a graceful stop
// would let the memory grow further while in-flight calls finish.
func (p *proc) kill() {
	p.cmd.Process.Kill()
	<-p.exited
}

// clockTicks is USER_HZ, the unit of the CPU times in /proc/PID/stat: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// cpuTime is the user plus system CPU time the process has used so far.
func (p *proc) cpuTime() (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseProcStat(string(b))
}

// selfCPUTime is the CPU time this process (the load client) has used so far.
func selfCPUTime() (time.Duration, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, err
	}
	return parseProcStat(string(b))
}

// parseProcStat reads utime and stime (fields 14 and 15) from a /proc/PID/stat line.
// The command name, field 2, is in parentheses and may itself hold spaces and
// parentheses, so the fields are counted from the last ')'.
func parseProcStat(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("/proc stat: no command name")
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat: %d fields after the command name", len(f))
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// memory is a process's resident set as /proc/PID/status reports it.
type memory struct {
	rss, peak int64 // VmRSS and VmHWM, bytes
}

func (p *proc) memory() (memory, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/status")
	if err != nil {
		return memory{}, err
	}
	defer f.Close()
	return parseProcStatus(f)
}

// parseProcStatus reads VmRSS and VmHWM from a /proc/PID/status file.
func parseProcStatus(r io.Reader) (memory, error) {
	var m memory
	var found int
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return m, fmt.Errorf("/proc status: unexpected %s line %q", key, sc.Text())
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("/proc status: %s: %w", key, err)
		}
		if key == "VmRSS" {
			m.rss = kb << 10
		} else {
			m.peak = kb << 10
		}
		found++
	}
	if err := sc.Err(); err != nil {
		return m, err
	}
	if found != 2 {
		return m, errors.New("/proc status: VmRSS or VmHWM missing")
	}
	return m, nil
}
