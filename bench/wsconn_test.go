package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

func TestWSAccept(t *testing.T) {
	// The example of RFC 6455, section 1.3.
	if got := wsAccept("dGhlIHNhbXBsZSBub25jZQ=="); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("wsAccept = %q", got)
	}
}

// The subscribers' client against a server of github.com/coder/websocket: its
// masked frames are accepted, pings are answered, messages of each length encoding
// and fragmented ones are read, and the server's close ends the reading.
func TestWSConn(t *testing.T) {
	long := strings.Repeat("x", 70_000)
	serverErr := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serverErr <- func() error {
			c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"graphql-transport-ws"}})
			if err != nil {
				return err
			}
			defer c.CloseNow()
			ctx := r.Context()
			if _, b, err := c.Read(ctx); err != nil || string(b) != "hello" {
				return errors.Join(errors.New("the client's message"), err)
			}
			// Ping needs Read running to see the pong.
			go c.Read(ctx)
			if err := c.Ping(ctx); err != nil {
				return err
			}
			for _, m := range []string{"short", strings.Repeat("y", 300), long} {
				if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
					return err
				}
			}
			fw, err := c.Writer(ctx, websocket.MessageText)
			if err != nil {
				return err
			}
			io.WriteString(fw, "frag")
			io.WriteString(fw, "mented")
			if err := fw.Close(); err != nil {
				return err
			}
			return c.Close(websocket.StatusNormalClosure, "bye")
		}()
	}))
	defer srv.Close()
	ctx := testCtx(t)
	c, err := dialWS(ctx, &net.Dialer{}, strings.TrimPrefix(srv.URL, "http://"), "/graphql", "graphql-transport-ws", "graphql-ws")
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if c.subprotocol != "graphql-transport-ws" {
		t.Errorf("subprotocol %q", c.subprotocol)
	}
	context.AfterFunc(ctx, func() { c.close() }) // nothing hangs
	if err := c.writeText([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"short", strings.Repeat("y", 300), long, "fragmented"} {
		b, err := c.read()
		if err != nil || string(b) != want {
			t.Fatalf("read %d bytes (%.20q), %v; want %d bytes", len(b), b, err, len(want))
		}
	}
	if b, err := c.read(); err != io.EOF {
		t.Fatalf("after the server's close: %q, %v", b, err)
	}
	if err := <-serverErr; err != nil {
		t.Fatalf("server: %v", err)
	}
}

// A masked frame from a server, or one over the size bound, is an error.
func TestWSConnRefusesBadFrames(t *testing.T) {
	for name, frame := range map[string][]byte{
		"masked":   {0x81, 0x82, 1, 2, 3, 4, 'o' ^ 1, 'k' ^ 2},
		"too long": {0x81, 127, 0, 0, 0, 0, 0x10, 0, 0, 0},
		"opcode":   {0x83, 0},
		"short":    {0x81, 5, 'o', 'k'},
	} {
		c := &wsConn{br: bufio.NewReader(bytes.NewReader(frame))}
		if b, err := c.read(); err == nil {
			t.Errorf("%s: read %q", name, b)
		}
	}
}

// eventUserID agrees with decoding the message in full, and declines what it does
// not recognise.
func TestEventUserID(t *testing.T) {
	for _, tc := range []struct {
		msg string
		id  int64
		ok  bool
	}{
		{`{"id":"1","type":"next","payload":{"data":{"onUserCreated":{"id":1007,"name":"Fan Out"}}}}`, 1007, true},
		{`{"type":"data","id":"1","payload":{"data":{"onUserCreated":{"id":42}}}}`, 42, true},
		{`{"type": "next", "payload": {"data": {"onUserCreated": { "id" : 5 , "name": "x"}}}}`, 5, true},
		{`{"type":"next","payload":{"data":{"onUserCreated":{"id":"77","name":"x"}}}}`, 77, true},
		{`{"type":"next","payload":{"data":{"onUserCreated":{"name":"x","id":3}}}}`, 0, false},
		{`{"type":"next","payload":{"data":{"onUserCreated":{"id":3.5}}}}`, 0, false},
		{`{"type":"next","payload":{"data":{"onUserCreated":{"id":`, 0, false},
		{`{"type":"next","payload":{"data":{"onUserCreated":null}}}`, 0, false},
		{`{"type":"ping"}`, 0, false},
	} {
		id, ok := eventUserID([]byte(tc.msg))
		if id != tc.id || ok != tc.ok {
			t.Errorf("eventUserID(%s) = %d, %v; want %d, %v", tc.msg, id, ok, tc.id, tc.ok)
		}
		var m wsEvent
		if ok && !strings.Contains(tc.msg, `"77"`) && (json.Unmarshal([]byte(tc.msg), &m) != nil || m.Payload.Data.OnUserCreated.ID != id) {
			t.Errorf("%s: encoding/json reads id %d", tc.msg, m.Payload.Data.OnUserCreated.ID)
		}
	}
}
