package main

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"time"
)

// The fan-out's subscribers speak WebSocket through this small client rather than
// github.com/coder/websocket. The 10,000 subscribers run in the harness process, on
// the two CPUs the service uses to deliver the event; with that library (and
// encoding/json) a delivery cost the client 14 to 25 µs of CPU against the
// service's 20 to 28 µs, and that time was charged to the service's delivery
// latency. Here a subscriber reads the server's frames straight from a
// bufio.Reader into a buffer it reuses, which with readEvents' lean look-up of the
// user id costs 8 to 10 µs a delivery, most of it the read system call.

// wsGUID is the key suffix of the WebSocket handshake (RFC 6455, section 1.3).
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// The frame opcodes a client meets.
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

// wsMaxMessage bounds one message from the server: the subscribers only get small
// events, and a larger message means a broken stream.
const wsMaxMessage = 1 << 20

// wsConn is the client end of one WebSocket connection. Only one goroutine may use
// it at a time; close may be called from any.
type wsConn struct {
	nc          net.Conn
	br          *bufio.Reader
	subprotocol string // the one the server chose
	msg         []byte // the message being read; reused
	wbuf        []byte // the frame being written; reused
	ctl         [125]byte
	closeCode   int // the status code of the server's close frame, once read; 0 before
}

// upgradeError is a server's refusal to switch protocols: its HTTP status.
type upgradeError struct{ status int }

func (e *upgradeError) Error() string { return fmt.Sprintf("WebSocket upgrade: status %d", e.status) }

// dialWS connects from from to ws://addr+path offering subprotocols, and returns once the
// server has switched protocols. Everything it does is bounded by ctx.
func dialWS(ctx context.Context, from *net.Dialer, addr, path string, subprotocols ...string) (*wsConn, error) {
	nc, err := from.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	c := &wsConn{nc: nc, br: bufio.NewReaderSize(nc, 4096)}
	err = c.handshake(addr, path, subprotocols)
	if !stop() || err != nil {
		nc.Close()
		return nil, errors.Join(err, ctx.Err())
	}
	nc.SetDeadline(time.Time{})
	return c, nil
}

// handshake sends the upgrade request and checks the server's answer.
func (c *wsConn) handshake(addr, path string, subprotocols []string) error {
	var raw [16]byte
	binary.LittleEndian.PutUint64(raw[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(raw[8:], rand.Uint64())
	key := base64.StdEncoding.EncodeToString(raw[:])
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n"
	if len(subprotocols) > 0 {
		req += "Sec-WebSocket-Protocol: " + strings.Join(subprotocols, ", ") + "\r\n"
	}
	if _, err := io.WriteString(c.nc, req+"\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return &upgradeError{status: resp.StatusCode}
	}
	if got := resp.Header.Get("Sec-WebSocket-Accept"); got != wsAccept(key) {
		return fmt.Errorf("WebSocket upgrade: Sec-WebSocket-Accept %q does not match the key", got)
	}
	c.subprotocol = resp.Header.Get("Sec-WebSocket-Protocol")
	return nil
}

// wsAccept is the Sec-WebSocket-Accept a server must answer key with.
func wsAccept(key string) string {
	sum := sha1.Sum([]byte(key + wsGUID))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// write sends one frame, masked as every client frame must be (RFC 6455, 5.3).
func (c *wsConn) write(op byte, payload []byte) error {
	b := append(c.wbuf[:0], 0x80|op)
	switch n := len(payload); {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n < 1<<16:
		b = append(b, 0x80|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	var mask [4]byte
	binary.LittleEndian.PutUint32(mask[:], rand.Uint32())
	b = append(b, mask[:]...)
	start := len(b)
	b = append(b, payload...)
	for i := range payload {
		b[start+i] ^= mask[i&3]
	}
	c.wbuf = b
	_, err := c.nc.Write(b)
	return err
}

// writeText sends one text message.
func (c *wsConn) writeText(msg []byte) error { return c.write(opText, msg) }

// read returns the next data message, assembled from its fragments, valid until
// the next read. It answers pings on the way, and returns io.EOF when the server
// closes the connection (after answering its close).
func (c *wsConn) read() ([]byte, error) {
	c.msg = c.msg[:0]
	for {
		fin, op, n, err := c.readFrameHeader()
		if err != nil {
			return nil, err
		}
		if op >= opClose {
			if err := c.control(op, n); err != nil {
				return nil, err
			}
			continue
		}
		if op != opContinuation && op != opText && op != opBinary {
			return nil, fmt.Errorf("WebSocket: unknown opcode %#x", op)
		}
		if len(c.msg)+n > wsMaxMessage {
			return nil, fmt.Errorf("WebSocket: message over %d bytes", wsMaxMessage)
		}
		m := len(c.msg)
		c.msg = append(c.msg, make([]byte, n)...)
		if _, err := io.ReadFull(c.br, c.msg[m:]); err != nil {
			return nil, err
		}
		if fin {
			return c.msg, nil
		}
	}
}

// readFrameHeader reads a frame's header: the FIN bit, the opcode and the payload
// length. A server's frames are never masked (RFC 6455, 5.1).
func (c *wsConn) readFrameHeader() (fin bool, op byte, n int, err error) {
	var h [2]byte
	if _, err := io.ReadFull(c.br, h[:]); err != nil {
		return false, 0, 0, err
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0f
	if h[1]&0x80 != 0 {
		return false, 0, 0, errors.New("WebSocket: a masked frame from the server")
	}
	switch l := h[1] & 0x7f; l {
	case 126:
		var ext [2]byte
		_, err = io.ReadFull(c.br, ext[:])
		n = int(binary.BigEndian.Uint16(ext[:]))
	case 127:
		var ext [8]byte
		_, err = io.ReadFull(c.br, ext[:])
		l64 := binary.BigEndian.Uint64(ext[:])
		if l64 > wsMaxMessage {
			return false, 0, 0, fmt.Errorf("WebSocket: frame of %d bytes", l64)
		}
		n = int(l64)
	default:
		n = int(l)
	}
	return fin, op, n, err
}

// control handles a control frame of n bytes: a ping gets a pong with its payload,
// a close gets a close back and ends the reading with io.EOF.
func (c *wsConn) control(op byte, n int) error {
	if n > len(c.ctl) {
		return fmt.Errorf("WebSocket: control frame of %d bytes", n)
	}
	payload := c.ctl[:n]
	if _, err := io.ReadFull(c.br, payload); err != nil {
		return err
	}
	switch op {
	case opPing:
		return c.write(opPong, payload)
	case opClose:
		if n >= 2 {
			c.closeCode = int(binary.BigEndian.Uint16(payload))
		}
		c.write(opClose, payload[:min(n, 2)]) // echo the status code
		return io.EOF
	}
	return nil // a pong, or a reserved control opcode
}

// close closes the connection at once, without the closing handshake.
func (c *wsConn) close() error { return c.nc.Close() }
