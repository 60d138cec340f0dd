package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"quartet/userpb"
)

// The hostile attacks, one kind each. Every GraphQL document ends in a comment
// "#k" with the request's number k, so that no two requests share a document
// cache entry: an attacker pays for a parse and a validation each time.

// target is where the service being attacked listens.
type target struct {
	httpAddr, grpcAddr string
	from               *net.Dialer // the attacker's connections start from its own address
}

// attack is one kind of hostile request.
type attack struct {
	name string
	run  func(ctx context.Context, t target) *kindResult
}

// attacks lists the kinds in the order they run.
func (h *hostile) attacks() []attack {
	c, s := h.cfg, h.cfg.sizes
	httpKind := func(name string, req func(k int) hostileRequest) attack {
		return attack{name: name, run: func(ctx context.Context, t target) *kindResult {
			return attackHTTP(ctx, t.from, t.httpAddr, c.requests, c.attackers, c.timeout, req)
		}}
	}
	orderby, filter := orderbyPath(s.orderbyKeys), filterPath(s.filterTerms)
	return []attack{
		httpKind(fmt.Sprintf("GraphQL overlap, %d user(id:i){id}, POST", s.overlapFields),
			markedPOST(overlapDoc(s.overlapFields), "")),
		httpKind(fmt.Sprintf("GraphQL overlap, %d user(id:i){id}, GET", s.overlapFields),
			markedGET(overlapDoc(s.overlapFields))),
		httpKind(fmt.Sprintf("GraphQL %d aliases of a depth-8 users/posts/comments/author query", s.nestedAliases),
			markedPOST(nestedAliasesDoc(s.nestedAliases), "")),
		httpKind(fmt.Sprintf("GraphQL %d operations x %d fields", s.operations, s.opFields),
			markedPOST(manyOperationsDoc(s.operations, s.opFields), "O0")),
		httpKind(fmt.Sprintf("GraphQL %d @foo directives", s.directives),
			markedPOST(directivesDoc(s.directives), "")),
		httpKind(fmt.Sprintf("GraphQL %d unused variables", s.variables),
			markedPOST(variablesDoc(s.variables), "")),
		httpKind(fmt.Sprintf("GraphQL distinct valid %d-byte documents", s.docBytes), func(k int) hostileRequest {
			return graphqlPOST(bigDoc(k, s.docBytes), "")
		}),
		httpKind(fmt.Sprintf("OData $orderby=isActive x%d, $top=1", s.orderbyKeys), func(int) hostileRequest {
			return hostileRequest{method: "GET", path: orderby}
		}),
		httpKind(fmt.Sprintf("OData $filter=id in (%d terms), $count", s.filterTerms), func(int) hostileRequest {
			return hostileRequest{method: "GET", path: filter}
		}),
		{
			name: fmt.Sprintf("gRPC CreateUsers, %d streams of %d users, %d open at once", c.grpcStreams, s.grpcUsers, c.grpcParallel),
			run: func(ctx context.Context, t target) *kindResult {
				return attackCreateUsers(ctx, t.from, t.grpcAddr, c.grpcStreams, c.grpcParallel, s.grpcUsers, c.grpcHold, c.timeout)
			},
		},
		{
			name: fmt.Sprintf("WebSocket %d sockets x %d subscriptions, one address", s.wsSockets, s.wsSubs),
			run: func(ctx context.Context, t target) *kindResult {
				return attackWebSockets(ctx, t.from, t.httpAddr, s.wsSockets, s.wsSubs, c.wsHold, c.timeout)
			},
		},
	}
}

// markedPOST is a GraphQL POST of doc whose request k ends the document in the
// comment "#k". The document is built and escaped into the body once and each
// request copies it: on this machine the attacker's CPU is taken from the
// service's and the legitimate client's, and a real attacker builds its requests
// elsewhere (bench/README.md, "Hostile load").
func markedPOST(doc, operationName string) func(k int) hostileRequest {
	escaped, _ := json.Marshal(doc)
	head := `{"query":` + string(escaped[:len(escaped)-1]) + `\n#`
	tail := `"}`
	if operationName != "" {
		op, _ := json.Marshal(operationName)
		tail = `","operationName":` + string(op) + "}"
	}
	return func(k int) hostileRequest {
		body := make([]byte, 0, len(head)+len(tail)+20)
		body = strconv.AppendInt(append(body, head...), int64(k), 10)
		return hostileRequest{method: "POST", path: "/graphql", body: append(body, tail...), contentType: "application/json"}
	}
}

// markedGET is markedPOST's GET: the document is in the query string.
func markedGET(doc string) func(k int) hostileRequest {
	head := "/graphql?query=" + url.QueryEscape(doc+"\n#")
	return func(k int) hostileRequest {
		return hostileRequest{method: "GET", path: head + strconv.Itoa(k)}
	}
}

// graphqlPOST is a GraphQL POST of doc.
func graphqlPOST(doc, operationName string) hostileRequest {
	req := map[string]string{"query": doc}
	if operationName != "" {
		req["operationName"] = operationName
	}
	body, _ := json.Marshal(req)
	return hostileRequest{method: "POST", path: "/graphql", body: body, contentType: "application/json"}
}

// overlapDoc is n fields with the response name "user" and different arguments:
// every pair conflicts, which an unbounded overlap validation reports pair by pair.
func overlapDoc(n int) string {
	var b strings.Builder
	b.WriteString("{ ")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "user(id:%d){id} ", i)
	}
	b.WriteString("}")
	return b.String()
}

// nestedAliasesDoc is n aliases of a depth-8 query whose answer grows with
// users x (posts x comments)^2: small, under the depth, field and alias limits,
// and a huge answer without a cost bound.
func nestedAliasesDoc(n int) string {
	var b strings.Builder
	b.WriteString("{ ")
	for i := range n {
		fmt.Fprintf(&b, "a%d: users { posts { comments { author { posts { comments { author { name email } } } } } } } ", i)
	}
	b.WriteString("}")
	return b.String()
}

// manyOperationsDoc is ops named operations of fields fields each: each operation
// is under the per-operation field limit, the document far over it.
func manyOperationsDoc(ops, fields int) string {
	var b strings.Builder
	for o := range ops {
		fmt.Fprintf(&b, "query O%d { user(id: 1) { ", o)
		b.WriteString(strings.Repeat("id ", fields-1))
		b.WriteString("} }\n")
	}
	return b.String()
}

// directivesDoc puts n unknown directives on one field: an error each.
func directivesDoc(n int) string {
	return "{ user(id: 1) { id" + strings.Repeat(" @foo", n) + " } }"
}

// variablesDoc defines n variables that the operation does not use: an error each.
func variablesDoc(n int) string {
	var b strings.Builder
	b.WriteString("query Q(")
	for i := range n {
		fmt.Fprintf(&b, "$v%d: Int ", i)
	}
	b.WriteString(") { user(id: 1) { id } }")
	return b.String()
}

// bigDoc is a document of about size bytes, distinct for each k, that stays
// valid under the service's per-document limits (at most 2,000 fields and 200
// directives), so that only the cache's own bound keeps it out: one field
// repeated, 10 bytes a selection. A document cache bounded by entries rather
// than bytes holds a thousand of them.
func bigDoc(k, size int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "query D%d { user(id: 1) { ", k)
	for b.Len() < size-13 {
		b.WriteString("createdAt ")
	}
	b.WriteString("} }")
	return b.String()
}

// orderbyPath sorts by the same key n times.
func orderbyPath(n int) string {
	return "/api/products?$orderby=" + strings.TrimSuffix(strings.Repeat("isActive,", n), ",") + "&$top=1"
}

// filterPath is a filter of n terms. They are the literals of an "in" list because
// n "or" terms do not fit the service's 64 KiB header limit, which would refuse
// the request before OData sees it; "(" and "," are left unescaped (RFC 3986
// allows them in a query) for the same reason. $count makes the service test
// every product, not only until the first match.
func filterPath(n int) string {
	var b strings.Builder
	b.WriteString("/api/products?$filter=id%20in%20(")
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteString(")&$top=1&$count=true")
	return b.String()
}

// attackCreateUsers opens streams CreateUsers calls, parallel at a time, over one
// connection, and sends users users on each. A stream the service ends early is
// recorded with its status code (ResourceExhausted is the bound working); a stream
// that took every user is held open for hold, still uncommitted, and then
// cancelled, so that the users are never stored and only the buffering is
// measured. A stream not done within timeout (plus the hold) has failed; as in
// attackHTTP, the kind stops once parallel streams have.
func attackCreateUsers(ctx context.Context, from *net.Dialer, addr string, streams, parallel, users int, hold, timeout time.Duration) *kindResult {
	k := &kindResult{}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return from.DialContext(ctx, "tcp", addr) }))
	if err != nil {
		k.failed(ctx, err)
		return k
	}
	defer cc.Close()
	client := userpb.NewUserServiceClient(cc)
	msg := &userpb.CreateUserRequest{Name: "Hostile Streamer", Email: "hostile.streamer@example.com"}
	msgBytes := proto.Size(msg)
	var (
		mu      sync.Mutex
		sentMax int
		sentAll []int
		next    atomic.Int64
		wg      sync.WaitGroup
	)
	for range parallel {
		wg.Go(func() {
			for ctx.Err() == nil && int(next.Add(1)) <= streams {
				if k.unanswered() >= parallel {
					k.giveUp()
					cancel()
					return
				}
				k.mu.Lock()
				k.sent++
				k.mu.Unlock()
				sent, outcome, lat, err := createUsersStream(ctx, client, msg, users, hold, timeout)
				mu.Lock()
				sentAll = append(sentAll, sent)
				sentMax = max(sentMax, sent)
				mu.Unlock()
				if err != nil {
					k.failed(ctx, err)
					continue
				}
				k.answered(outcome, lat, 0)
			}
		})
	}
	wg.Wait()
	k.sorted()
	total := 0
	for _, n := range sentAll {
		total += n
	}
	if len(sentAll) > 0 {
		k.detail = fmt.Sprintf("users sent per stream: mean %d, max %d (%s of messages each at most)",
			total/len(sentAll), sentMax, fmtBytes(int64(sentMax*msgBytes)))
	}
	return k
}

// createUsersStream runs one CreateUsers call; see attackCreateUsers. It returns
// how many users were sent, the outcome (the status code the service ended the
// call with, or "held open"), and the time until the service ended the call or,
// when it did not, until the last user was sent.
func createUsersStream(ctx context.Context, client userpb.UserServiceClient, msg *userpb.CreateUserRequest, users int, hold, timeout time.Duration) (int, string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout+hold)
	defer cancel() // without CloseSend: the call is abandoned, nothing is stored
	t0 := time.Now()
	st, err := client.CreateUsers(ctx)
	if err != nil {
		return 0, "", 0, err
	}
	sent := 0
	for sent < users {
		if err = st.Send(msg); err != nil {
			break
		}
		sent++
	}
	var ended error // the call's status, once the service has ended it
	switch {
	case err == nil:
		// Every user went out, though the last ones may sit in buffers while the
		// service has already refused the stream: hold it, watching for the end.
		lat := time.Since(t0)
		end := make(chan error, 1)
		go func() { end <- st.RecvMsg(new(userpb.CreateUsersResponse)) }()
		select {
		case <-time.After(hold):
			return sent, "held open", lat, nil
		case ended = <-end:
		}
	case errors.Is(err, io.EOF): // the call has ended; its status says why
		_, ended = st.CloseAndRecv()
	default:
		return sent, "", 0, err
	}
	lat := time.Since(t0)
	// When the client's own deadline or cancellation ended the call, the service
	// did not answer; otherwise it refused (a DeadlineExceeded of its own is a
	// bound too).
	if ctx.Err() != nil {
		return sent, "", 0, fmt.Errorf("CreateUsers after %d users: %w", sent, ctx.Err())
	}
	return sent, status.Code(ended).String(), lat, nil
}

// attackWebSockets opens sockets WebSockets to /graphql from this one address,
// subscribes each to onUserCreated subs times, and holds them open for hold while
// the legitimate client creates users, so that every refusal the service makes
// (at the upgrade, by a close code, or by an error message per subscription) is
// counted. The latency is a socket's set-up: dial to its last subscribe sent.
func attackWebSockets(ctx context.Context, from *net.Dialer, addr string, sockets, subs int, hold, timeout time.Duration) *kindResult {
	k := &kindResult{}
	var (
		subsSent, subErrors, events atomic.Int64
		open                        []*wsAttacker
		mu                          sync.Mutex
		wg                          sync.WaitGroup
		gate                        = make(chan struct{}, 32) // dials in flight
	)
	for range sockets {
		if ctx.Err() != nil {
			break
		}
		gate <- struct{}{}
		k.mu.Lock()
		k.sent++
		k.mu.Unlock()
		wg.Go(func() {
			defer func() { <-gate }()
			t0 := time.Now()
			a, outcome, err := openWSAttacker(ctx, from, addr, subs, timeout)
			switch {
			case err != nil:
				k.failed(ctx, err)
			case a == nil:
				k.answered(outcome, time.Since(t0), 0)
			default:
				subsSent.Add(int64(subs))
				mu.Lock()
				open = append(open, a)
				mu.Unlock()
				go a.read(&subErrors, &events)
			}
		})
	}
	wg.Wait()
	select {
	case <-time.After(hold):
	case <-ctx.Done():
	}
	// Each open socket's outcome is how it stands at the end of the hold.
	for _, a := range open {
		outcome := "open"
		if code := a.ended(); code >= 0 {
			outcome = "closed " + closeName(code) + " later"
		} else if a.subErrors.Load() > 0 {
			outcome = "open, some subscriptions refused"
		}
		k.answered(outcome, a.setup, 0)
		a.conn.close()
	}
	for _, a := range open {
		<-a.done
	}
	k.sorted()
	k.detail = fmt.Sprintf("subscriptions sent %d, refused by error message %d; events received %d",
		subsSent.Load(), subErrors.Load(), events.Load())
	return k
}

// wsAttacker is one hostile WebSocket.
type wsAttacker struct {
	conn      *wsConn
	setup     time.Duration
	subErrors atomic.Int64
	done      chan struct{} // closed when the reader has ended
	closeCode atomic.Int64  // the service's close code, 0 for none, when done
}

// openWSAttacker dials, initialises and subscribes subs times. A refusal (an
// upgrade status other than 101, or the socket ended before the last subscribe
// was sent) is returned as the outcome with a nil attacker; only a timeout or a
// failed dial is an error.
func openWSAttacker(ctx context.Context, from *net.Dialer, addr string, subs int, timeout time.Duration) (*wsAttacker, string, error) {
	t0 := time.Now()
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := dialWS(dctx, from, addr, "/graphql", "graphql-transport-ws")
	if err != nil {
		if ue := (*upgradeError)(nil); errors.As(err, &ue) {
			return nil, "upgrade " + strconv.Itoa(ue.status), nil
		}
		return nil, "", err
	}
	dl, _ := dctx.Deadline()
	c.nc.SetDeadline(dl)
	// After the upgrade, a write or read that fails is the service ending the
	// socket, named by its close code when it sent one, which may still be
	// waiting to be read after a failed write.
	refused := func(stage string, err error) (*wsAttacker, string, error) {
		defer c.close()
		if isTimeout(err) {
			return nil, "", err
		}
		for c.closeCode == 0 {
			if _, err := c.read(); err != nil {
				break
			}
		}
		return nil, "closed " + closeName(c.closeCode) + " " + stage, nil
	}
	if err := c.writeText([]byte(`{"type":"connection_init"}`)); err != nil {
		return refused("at init", err)
	}
	for {
		msg, err := c.read()
		if err != nil {
			return refused("at init", err)
		}
		if bytes.Contains(msg, []byte(`"connection_ack"`)) {
			break
		}
	}
	for i := 1; i <= subs; i++ {
		sub := fmt.Sprintf(`{"id":"%d","type":"subscribe","payload":{"query":%q}}`, i, fanOutQuery)
		if err := c.writeText([]byte(sub)); err != nil {
			return refused("while subscribing", err)
		}
	}
	c.nc.SetDeadline(time.Time{})
	return &wsAttacker{conn: c, setup: time.Since(t0), done: make(chan struct{})}, "", nil
}

// read counts the socket's messages until it ends: events, and error messages
// (refused subscriptions). Pings are answered.
func (a *wsAttacker) read(subErrors, events *atomic.Int64) {
	defer close(a.done)
	for {
		msg, err := a.conn.read()
		if err != nil {
			a.closeCode.Store(int64(a.conn.closeCode))
			return
		}
		switch {
		case bytes.Contains(msg, []byte(`"type":"next"`)):
			events.Add(1)
		case bytes.Contains(msg, []byte(`"type":"error"`)):
			subErrors.Add(1)
			a.subErrors.Add(1)
		case bytes.Contains(msg, []byte(`"type":"ping"`)):
			a.conn.writeText([]byte(`{"type":"pong"}`))
		}
	}
}

// ended is the close code the socket ended with (0: without a close frame), or -1
// while it is open.
func (a *wsAttacker) ended() int {
	select {
	case <-a.done:
		return int(a.closeCode.Load())
	default:
		return -1
	}
}

func closeName(code int) string {
	if code == 0 {
		return "(no close frame)"
	}
	return strconv.Itoa(code)
}
