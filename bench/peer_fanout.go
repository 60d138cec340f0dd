package main

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
)

// bareFanOut is the fan-out ceiling: the least any server does to tell N
// WebSocket subscribers of one event. GET /graphql accepts a socket and speaks
// just enough graphql-transport-ws (connection_init, connection_ack and a ping,
// as a server's keep-alive would send, and a subscribe to onUserCreated; any
// other subscription closes the socket);
// POST /api/users answers 201 with a new id, then writes one prepared event to
// every subscriber, from as many goroutines as there are CPUs, each taking a
// share of the subscribers. No query is run, nothing is stored, and no
// goroutine is woken per subscriber.
type bareFanOut struct {
	mu     sync.Mutex
	subs   map[*websocket.Conn]string // subscription id by socket
	nextID atomic.Int64
}

func newBareFanOut(mux *http.ServeMux) *bareFanOut {
	f := &bareFanOut{subs: map[*websocket.Conn]string{}}
	f.nextID.Store(1_000_000) // above any id of the dataset
	mux.HandleFunc("GET /graphql", f.subscribe)
	mux.HandleFunc("POST /api/users", f.create)
	return f
}

// subscribe serves one subscriber until its socket closes.
func (f *bareFanOut) subscribe(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		return
	}
	defer func() {
		f.mu.Lock()
		delete(f.subs, c)
		f.mu.Unlock()
		c.CloseNow()
	}()
	ctx := context.Background()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return
		}
		var m wsMessage
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		switch m.Type {
		case "connection_init":
			c.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_ack"}`))
			c.Write(ctx, websocket.MessageText, []byte(`{"type":"ping"}`))
		case "subscribe":
			if !strings.Contains(string(m.Payload), "onUserCreated") {
				return
			}
			f.mu.Lock()
			f.subs[c] = m.ID
			f.mu.Unlock()
		}
	}
}

// create answers a new user's id and sends the event to every subscriber.
func (f *bareFanOut) create(w http.ResponseWriter, r *http.Request) {
	var u struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(r.Body).Decode(&u); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := f.nextID.Add(1)
	user, _ := json.Marshal(map[string]any{"id": id, "name": u.Name})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	w.Write(user)

	f.mu.Lock()
	conns := make([]*websocket.Conn, 0, len(f.subs))
	ids := make([]string, 0, len(f.subs))
	for c, sid := range f.subs {
		conns, ids = append(conns, c), append(ids, sid)
	}
	f.mu.Unlock()
	events := map[string][]byte{} // by subscription id: the harness's are all the same
	for _, sid := range ids {
		if events[sid] == nil {
			events[sid] = []byte(`{"id":` + strconv.Quote(sid) + `,"type":"next","payload":{"data":{"onUserCreated":` + string(user) + `}}}`)
		}
	}
	workers := runtime.GOMAXPROCS(0)
	for k := range workers {
		go func() {
			for i := k; i < len(conns); i += workers {
				conns[i].Write(context.Background(), websocket.MessageText, events[ids[i]])
			}
		}()
	}
}
