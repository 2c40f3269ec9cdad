// Package rlockd starts the rlockd server (a Redis-protocol server that runs Redis lock
// scripts, Redisson's, redsync's and BullMQ's among them, as Redis 7.0 does) from Go tests,
// on a free port on 127.0.0.1, and stops it when the test ends:
//
//	func TestLock(t *testing.T) {
//		srv := rlockd.Start(t)                  // stopped by t.Cleanup
//		opt, _ := redis.ParseURL(srv.URL())     // go-redis
//		...
//		srv.AdvanceClock(30 * time.Second)      // no sleeping: leases run out now
//		srv.AssertLocksSafe()
//	}
//
// The server's test control (RLOCKD ...) is there as typed methods: the clock, the locks
// and their events, safety checks, snapshots and faults. When the test fails, the server's
// log is written to the test's output.
package rlockd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var ready = regexp.MustCompile(`ready to accept connections.*\(port (\d+)\)`)

// Option changes how a server is started.
type Option func(*config)

type config struct {
	port     int
	host     string
	password string
	args     []string
	binary   string
	confFile string
	timeout  time.Duration
	err      error // the first option given a value it does not take

	clusterReplicas int
}

// Port listens on this port (default 0: a free one the server picks).
func Port(p int) Option {
	return func(c *config) { c.port = check(c, "Port", p, p >= 0 && p <= 65535, "a port from 0 to 65535") }
}

// Password sets requirepass; URL() then carries it.
func Password(pw string) Option { return func(c *config) { c.password = pw } }

// Args adds command-line options, e.g. Args("--notify-keyspace-events", "KEA").
func Args(a ...string) Option { return func(c *config) { c.args = append(c.args, a...) } }

// ConfigFile reads this redis.conf first, as redis-server's first argument; the port, bind
// address and password options given here (or the free port by default) win over the file's.
func ConfigFile(path string) Option { return func(c *config) { c.confFile = path } }

// Binary runs this rlockd executable (default: see BinaryPath).
func Binary(path string) Option { return func(c *config) { c.binary = path } }

// StartupTimeout is how long to wait for the ready line (default 10 s).
func StartupTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout = check(c, "StartupTimeout", d, d > 0, "a positive duration") }
}

// options names the options in the error a wrong value gets.
const options = "Port, Password, Args, Binary, StartupTimeout, ClusterReplicas"

// check records the first option given a value it does not take (Start fails with it) and
// returns the value.
func check[T any](c *config, option string, v T, ok bool, takes string) T {
	if !ok && c.err == nil {
		c.err = fmt.Errorf("option %s takes %s, not %v (options: %s)", option, takes, v, options)
	}
	return v
}

// Server is one rlockd process on 127.0.0.1, or one node of a topology (Cluster,
// Replicated): its address and its own test control. The nodes of a topology share one
// process; Close, PID, Running and Logs are the process's.
type Server struct {
	*process
	host     string
	port     int
	password string
	tb       testing.TB
}

// process is the rlockd process behind one or several nodes.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited chan struct{}

	mu        sync.Mutex
	log       bytes.Buffer
	ports     []int // one ready line per node, in start order
	sentinels []int // then one per Sentinel

	closeOnce sync.Once
}

// node is the node listening on port, sharing s's process.
func (s *Server) node(port int) *Server {
	return &Server{process: s.process, host: s.host, port: port, password: s.password, tb: s.tb}
}

// Start starts a server for test tb and registers its stop with tb.Cleanup; when the test
// has failed by then, the server's log goes into the test's output and its lock timeline
// (RLOCKD TIMELINE) is written under RLOCKD_ARTIFACTS (default rlockd-artifacts), its path
// logged. With RLOCKD_RECORD=1 the server records every command (RLOCKD RECORD START) and a
// failed test's recording is saved beside the timeline, for rlockd replay. A server that cannot be
// started fails the test at once (t.Fatal). The typed test-control methods fail the test on
// an error reply.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s, err := Run(opts...)
	if err != nil {
		tb.Fatalf("rlockd: %v", err)
	}
	s.tb = tb
	if os.Getenv("RLOCKD_RECORD") == "1" {
		s.rlockd("RECORD", "START")
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("rlockd log (port %d):\n%s", s.port, strings.TrimRight(s.Logs(), "\n"))
			// The recording first: it then ends with the test's own commands.
			s.saveRecording(tb)
			s.writeTimeline(tb)
		}
		s.Close()
	})
	return s
}

// Run starts a server outside a test (or for a TestMain); Close stops it. Its typed
// test-control methods panic on an error reply; Do returns errors.
func Run(opts ...Option) (*Server, error) {
	return run(1, 0, nil, opts)
}

// run starts the process with the topology's options first and waits for a ready line per
// node and per Sentinel.
func run(nodes, sentinels int, topology []string, opts []Option) (*Server, error) {
	c := config{host: "127.0.0.1", timeout: 10 * time.Second}
	for _, o := range opts {
		o(&c)
	}
	if c.err != nil {
		return nil, c.err
	}
	c.args = append(append([]string{}, topology...), c.args...)
	exe, err := resolve(c.binary)
	if err != nil {
		return nil, err
	}
	args := []string{"--port", strconv.Itoa(c.port), "--bind", c.host}
	if c.confFile != "" {
		args = append([]string{c.confFile}, args...)
	}
	if c.password != "" {
		args = append(args, "--requirepass", c.password)
	}
	args = append(args, c.args...)
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "RLOCKD_STDIN_WATCHDOG=1", "NO_COLOR=1")
	// The server watches its standard input: when this process dies the pipe closes and
	// the server exits, so a killed test leaves nothing behind.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot run %s: %w", exe, err)
	}
	s := &Server{process: &process{cmd: cmd, stdin: stdin, exited: make(chan struct{})}, host: c.host,
		password: c.password}
	readyCh := make(chan struct{})
	var pumps sync.WaitGroup
	pumps.Add(2)
	go s.pump(stdout, readyCh, nodes, sentinels, &pumps)
	go s.pump(stderr, nil, 0, 0, &pumps)
	go func() {
		pumps.Wait() // the pipes are read to the end before Wait closes them
		_ = cmd.Wait()
		close(s.exited)
	}()
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	var why string
	select {
	case <-readyCh:
		s.mu.Lock()
		s.port = s.ports[0]
		s.mu.Unlock()
		return s, nil
	case <-s.exited:
		why = "exited with " + cmd.ProcessState.String()
	case <-timer.C:
		why = fmt.Sprintf("printed no ready line within %v", c.timeout)
	}
	s.kill()
	log := strings.TrimSpace(s.Logs())
	if log == "" {
		log = "(no output)"
	}
	if strings.Contains(strings.ToLower(log), "in use") {
		return nil, fmt.Errorf("rlockd could not listen on %s:%d: the port is already in use\n--- rlockd log ---\n%s",
			c.host, c.port, log)
	}
	return nil, fmt.Errorf("rlockd %s (%s %s)\n--- rlockd log ---\n%s", why, exe, strings.Join(args, " "), log)
}

func (s *Server) pump(r io.Reader, readyCh chan struct{}, nodes, sentinels int, done *sync.WaitGroup) {
	defer done.Done()
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			s.mu.Lock()
			s.log.WriteString(line)
			if m := ready.FindStringSubmatch(line); readyCh != nil && m != nil {
				p, _ := strconv.Atoi(m[1])
				if strings.Contains(line, "sentinel") {
					s.sentinels = append(s.sentinels, p)
				} else {
					s.ports = append(s.ports, p)
				}
				if len(s.ports) >= nodes && len(s.sentinels) >= sentinels {
					close(readyCh)
					readyCh = nil
				}
			}
			s.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// Port is the TCP port the server listens on.
func (s *Server) Port() int { return s.port }

// Host is the address it listens on (127.0.0.1).
func (s *Server) Host() string { return s.host }

// Addr is "127.0.0.1:PORT", as go-redis's Options.Addr takes it.
func (s *Server) Addr() string { return net.JoinHostPort(s.host, strconv.Itoa(s.port)) }

// Password is the requirepass the server was started with ("" for none).
func (s *Server) Password() string { return s.password }

// URL is redis://[:password@]127.0.0.1:PORT, as redis.ParseURL takes it.
func (s *Server) URL() string {
	auth := ""
	if s.password != "" {
		auth = ":" + urlEscape(s.password) + "@"
	}
	return "redis://" + auth + s.Addr()
}

// PID is the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Running reports whether the process is still alive.
func (s *Server) Running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Logs is everything the server printed so far (stdout and stderr).
func (s *Server) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// Close stops the server (SIGTERM, SIGKILL after 5 s). Safe to call twice.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		if s.Running() {
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.exited:
			case <-time.After(5 * time.Second):
				s.kill()
			}
		}
		_ = s.stdin.Close()
	})
}

func (s *Server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

func (s *Server) String() string {
	if s.Running() {
		return fmt.Sprintf("rlockd.Server(port %d)", s.port)
	}
	return "rlockd.Server(stopped)"
}

func urlEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// ErrorReply is an error answered by the server ("ERR ...", "WRONGTYPE ...").
type ErrorReply struct{ Message string }

func (e *ErrorReply) Error() string { return e.Message }

// Do sends one command on a new connection and returns the reply decoded from RESP2:
// a status or bulk string as string, an integer as int64, an array as []any, a nil as nil.
// An error reply is returned as *ErrorReply. Arguments are formatted with fmt.Sprint.
func (s *Server) Do(args ...any) (any, error) {
	conn, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	if s.password != "" {
		if _, err := conn.Write(encode([]any{"AUTH", s.password})); err != nil {
			return nil, err
		}
		if _, err := readReply(r); err != nil {
			return nil, err
		}
	}
	if _, err := conn.Write(encode(args)); err != nil {
		return nil, err
	}
	return readReply(r)
}

// Ping reports whether the server answers PONG.
func (s *Server) Ping() bool {
	r, err := s.Do("PING")
	return err == nil && r == "PONG"
}

func encode(args []any) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		var v string
		switch x := a.(type) {
		case string:
			v = x
		case []byte:
			v = string(x)
		default:
			v = fmt.Sprint(x)
		}
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(v), v)
	}
	return b.Bytes()
}

func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("connection closed by the server: %w", err)
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return nil, fmt.Errorf("unexpected reply %q", line)
	}
	kind, rest := line[0], line[1:len(line)-2]
	switch kind {
	case '+':
		return rest, nil
	case '-':
		return nil, &ErrorReply{Message: rest}
	case ':':
		return strconv.ParseInt(rest, 10, 64)
	case '$':
		n, err := strconv.Atoi(rest)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(rest)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			v, err := readReply(r)
			var er *ErrorReply
			if err != nil && !errors.As(err, &er) {
				return nil, err
			}
			if er != nil {
				out[i] = er
			} else {
				out[i] = v
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}
