// Package testcontainers has the shape of testcontainers-go's Redis module
// (github.com/testcontainers/testcontainers-go/modules/redis), started without Docker:
// switching a test is its import line,
//
//	redis "github.com/testcontainers/testcontainers-go/modules/redis"   // before (Docker)
//	redis "rlockd.dev/rlockd/testcontainers"                           // after (rlockd)
//
// Run(ctx, image, opts...) takes the image name and ignores it (no image is run: an rlockd
// process answers in its place); WithConfigFile, WithLogLevel and WithSnapshotting set the
// server's options as they set redis-server's in the container. The container has
// ConnectionString, Host, MappedPort, Endpoint, State, Stop and Terminate, and
// CleanupContainer registers its end with a test, as testcontainers-go's own does.
package testcontainers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"rlockd.dev/rlockd"
)

// LogLevel is redis-server's loglevel.
type LogLevel string

const (
	LogLevelDebug   LogLevel = "debug"
	LogLevelVerbose LogLevel = "verbose"
	LogLevelNotice  LogLevel = "notice"
	LogLevelWarning LogLevel = "warning"
)

// redisPort is the port a Redis container exposes.
const redisPort = "6379/tcp"

type settings struct {
	confFile string
	args     []string
}

// ContainerCustomizer changes how Run starts the container (testcontainers-go's interface name).
type ContainerCustomizer interface {
	Customize(s *settings) error
}

// Option is one of this module's customizers.
type Option func(*settings) error

// Customize applies the option.
func (o Option) Customize(s *settings) error { return o(s) }

// WithConfigFile reads this redis.conf first (redis-server's first argument); the port and
// bind address in it are the container's own and do not apply: the mapped port is a free one.
func WithConfigFile(configFile string) Option {
	return func(s *settings) error {
		s.confFile = configFile
		return nil
	}
}

// WithLogLevel sets --loglevel.
func WithLogLevel(level LogLevel) Option {
	return func(s *settings) error {
		s.args = append(s.args, "--loglevel", string(level))
		return nil
	}
}

// WithSnapshotting sets --save "<seconds> <changedKeys>" (both at least 1).
func WithSnapshotting(seconds int, changedKeys int) Option {
	return func(s *settings) error {
		if seconds < 1 {
			seconds = 1
		}
		if changedKeys < 1 {
			changedKeys = 1
		}
		s.args = append(s.args, "--save", fmt.Sprintf("%d %d", seconds, changedKeys))
		return nil
	}
}

// WithTLS is not supported: the server speaks plain TCP.
func WithTLS() Option {
	return func(*settings) error {
		return errors.New("rlockd/testcontainers: WithTLS is not supported (the server speaks plain TCP)")
	}
}

// WithArgs adds more rlockd command-line options, e.g. WithArgs("--redis-version", "8.2.3").
func WithArgs(args ...string) Option {
	return func(s *settings) error {
		s.args = append(s.args, args...)
		return nil
	}
}

// Port is a port as testcontainers-go names it ("6379/tcp"); Port() is its number.
type Port string

// Port is the number part ("6379").
func (p Port) Port() string { return strings.SplitN(string(p), "/", 2)[0] }

// Int is the number.
func (p Port) Int() int {
	n, _ := strconv.Atoi(p.Port())
	return n
}

// State is what Docker reports of a container, as far as it means something here.
type State struct {
	Status  string // "running" or "exited"
	Running bool
	Pid     int
}

// RedisContainer is the started server in a container's place.
type RedisContainer struct {
	image string
	mu    sync.Mutex
	srv   *rlockd.Server
}

// Deprecated: use Run instead (as in testcontainers-go).
func RunContainer(ctx context.Context, opts ...ContainerCustomizer) (*RedisContainer, error) {
	return Run(ctx, "redis:7", opts...)
}

// Run starts the server; img is recorded and not run.
func Run(ctx context.Context, img string, opts ...ContainerCustomizer) (*RedisContainer, error) {
	var s settings
	for _, o := range opts {
		if err := o.Customize(&s); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ropts := []rlockd.Option{rlockd.Args(s.args...)}
	if s.confFile != "" {
		ropts = append(ropts, rlockd.ConfigFile(s.confFile))
	}
	srv, err := rlockd.Run(ropts...)
	if err != nil {
		return nil, fmt.Errorf("generic container: %w", err)
	}
	return &RedisContainer{image: img, srv: srv}, nil
}

// Server is the rlockd server in the container's place, with its test control.
func (c *RedisContainer) Server() *rlockd.Server { return c.srv }

// Image is the image name given to Run.
func (c *RedisContainer) Image() string { return c.image }

// ConnectionString is redis://host:port.
func (c *RedisContainer) ConnectionString(ctx context.Context) (string, error) {
	mapped, err := c.MappedPort(ctx, redisPort)
	if err != nil {
		return "", err
	}
	host, err := c.Host(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("redis://%s:%s", host, mapped.Port()), nil
}

// Host is the address the server listens on.
func (c *RedisContainer) Host(ctx context.Context) (string, error) {
	if !c.IsRunning() {
		return "", errors.New("container is not running")
	}
	return c.srv.Host(), nil
}

// MappedPort is the host port for the container's 6379/tcp (the only one exposed).
func (c *RedisContainer) MappedPort(ctx context.Context, port Port) (Port, error) {
	if port.Port() != Port(redisPort).Port() {
		return "", fmt.Errorf("port %q not found: only %s is exposed", port, redisPort)
	}
	if !c.IsRunning() {
		return "", errors.New("container is not running")
	}
	return Port(strconv.Itoa(c.srv.Port()) + "/tcp"), nil
}

// Endpoint is host:port, with proto:// in front when proto is not empty.
func (c *RedisContainer) Endpoint(ctx context.Context, proto string) (string, error) {
	if !c.IsRunning() {
		return "", errors.New("container is not running")
	}
	if proto == "" {
		return c.srv.Addr(), nil
	}
	return proto + "://" + c.srv.Addr(), nil
}

// IsRunning reports whether the server is up.
func (c *RedisContainer) IsRunning() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.srv != nil && c.srv.Running()
}

// State reports whether the server runs.
func (c *RedisContainer) State(ctx context.Context) (*State, error) {
	if c.IsRunning() {
		return &State{Status: "running", Running: true, Pid: c.srv.PID()}, nil
	}
	return &State{Status: "exited"}, nil
}

// GetContainerID names the process (there is no container).
func (c *RedisContainer) GetContainerID() string {
	return fmt.Sprintf("rlockd-%d", c.srv.PID())
}

// Logs is what the server printed.
func (c *RedisContainer) Logs(ctx context.Context) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader(c.srv.Logs())), nil
}

// Stop stops the server (the data is gone: it lives in memory); timeout is not used.
func (c *RedisContainer) Stop(ctx context.Context, timeout *time.Duration) error {
	c.srv.Close()
	return nil
}

// TerminateOption is accepted for testcontainers-go's signature; none applies here.
type TerminateOption func()

// Terminate stops the server. A nil container is nothing to terminate.
func (c *RedisContainer) Terminate(ctx context.Context, opts ...TerminateOption) error {
	if c == nil {
		return nil
	}
	c.srv.Close()
	return nil
}

// CleanupContainer terminates the container when tb ends (a nil container is skipped, so it
// may be called before Run's error is checked, as testcontainers-go's examples do).
func CleanupContainer(tb testing.TB, ctr *RedisContainer, options ...TerminateOption) {
	tb.Helper()
	tb.Cleanup(func() {
		if ctr == nil {
			return
		}
		if err := ctr.Terminate(context.Background(), options...); err != nil {
			tb.Errorf("terminate container: %v", err)
		}
	})
}
