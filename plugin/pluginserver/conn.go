package pluginserver

import (
	"bufio"
	"net"
	"sync"
)

// conn is the connection to Kong as the PDK sees it. The protocol is
// strictly call and answer, so nothing written needs to leave before the
// next read: writes are gathered and sent in one syscall when the plugin
// reads Kong's answer, or when the connection closes. go-pdk's bridge
// writes each frame as a length and a body, two frames per PDK call, four
// writes that this turns into one. Reads are buffered for the same reason:
// a frame's length and body arrive together.
//
// conn is used by one goroutine at a time, as the protocol allows only one
// call in flight per connection; the mutex only guards against a handler
// that leaks the PDK to another goroutine.
type conn struct {
	net.Conn
	r *bufio.Reader

	mu      sync.Mutex
	pending []byte
	closed  bool
}

// buffers are a connection's read and write buffers. Kong closes the
// connection after every request that exits, so a connection lives for one
// request: its buffers are reused rather than made each time.
type buffers struct {
	r       *bufio.Reader
	pending []byte
}

var bufferPool = sync.Pool{New: func() any {
	return &buffers{r: bufio.NewReaderSize(nil, 4096), pending: make([]byte, 0, 4096)}
}}

func newConn(c net.Conn) *conn {
	b := bufferPool.Get().(*buffers)
	b.r.Reset(c)
	return &conn{Conn: c, r: b.r, pending: b.pending[:0]}
}

// release closes the connection and gives its buffers back; a PDK a
// handler kept past its event can use the connection no more.
func (c *conn) release() {
	_ = c.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.r == nil {
		return
	}
	c.r.Reset(nil)
	if cap(c.pending) <= 64<<10 {
		bufferPool.Put(&buffers{r: c.r, pending: c.pending[:0]})
	}
	c.r, c.pending = nil, nil
}

// Write queues p for the next flush.
func (c *conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	c.pending = append(c.pending, p...)
	return len(p), nil
}

// Read sends what is queued, then reads: the peer answers only once it has
// the whole call.
func (c *conn) Read(p []byte) (int, error) {
	if err := c.flush(); err != nil {
		return 0, err
	}
	c.mu.Lock()
	r := c.r
	c.mu.Unlock()
	if r == nil {
		return 0, net.ErrClosed
	}
	return r.Read(p)
}

// Close sends what is queued and closes. A handler closes the connection
// when it has answered the request (kong.response.exit): the server must
// not write on it afterwards.
func (c *conn) Close() error {
	flushErr := c.flush()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return net.ErrClosed
	}
	c.closed = true
	c.mu.Unlock()
	if err := c.Conn.Close(); err != nil {
		return err
	}
	return flushErr
}

// isClosed reports whether Close was called.
func (c *conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *conn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		return nil
	}
	if c.closed {
		return net.ErrClosed
	}
	_, err := c.Conn.Write(c.pending)
	// A large answer must not keep its buffer for the connection's life.
	if cap(c.pending) > 64<<10 {
		c.pending = make([]byte, 0, 4096)
	} else {
		c.pending = c.pending[:0]
	}
	return err
}
