package graphql

import (
	"encoding/json"
	"reflect"
	"sync"
	"sync/atomic"
)

// Fan-out: with Schema.ShareEventResults, one event reaching N subscribers of
// the same subscription (query text, operation name and coerced variables) is
// executed and encoded once, not N times.

// sharedEventWindow is how many of a stream's latest events keep their result
// for the subscribers that have not reached them yet; one further behind
// executes the event again, which costs time, never correctness.
const sharedEventWindow = 8

type fanout struct {
	mu      sync.Mutex
	streams map[string]*sharedStream
}

// sharedStream is what the subscribers of one subscription share.
type sharedStream struct {
	key         string
	subscribers atomic.Int64 // changed under fanout.mu, read without

	mu     sync.RWMutex
	recent [sharedEventWindow]*sharedResult // a ring; next is the oldest
	next   int
}

// sharedResult is the result of one event, made by the first subscriber to
// need it while the others wait.
type sharedResult struct {
	ev   any
	once sync.Once
	resp *Response // encoded (raw set); nil if making it panicked
}

// shareKey is the sharing key of a subscription. The variables are encoded with
// sorted keys, so that their order and spelling (1 or 1e0 for an Int) do not
// matter; ok is false when one cannot be encoded, and then nothing is shared.
func shareKey(query, operationName string, vars map[string]any) (key string, ok bool) {
	v, err := json.Marshal(vars)
	if err != nil {
		return "", false
	}
	// Neither a query nor a name holds NUL unescaped.
	return query + "\x00" + operationName + "\x00" + string(v), true
}

// join counts one more subscriber of key's stream and returns it, with the
// function to call when it is gone. Call it before the subscriber's source
// stream is created, so that the subscriber is counted before its events.
func (f *fanout) join(key string) (*sharedStream, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.streams[key]
	if st == nil {
		if f.streams == nil {
			f.streams = make(map[string]*sharedStream)
		}
		st = &sharedStream{key: key}
		f.streams[key] = st
	}
	st.subscribers.Add(1)
	return st, sync.OnceFunc(func() { f.leave(st) })
}

func (f *fanout) leave(st *sharedStream) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st.subscribers.Add(-1) == 0 && f.streams[st.key] == st {
		delete(f.streams, st.key)
	}
}

// result returns the response to ev: the one another subscriber made, or
// run's, then encoded once and kept for the others (unless the subscriber is
// alone). A nil stream, or an event that cannot be compared, just runs.
func (st *sharedStream) result(ev any, run func() *Response) *Response {
	if st == nil || ev == nil || !reflect.TypeOf(ev).Comparable() {
		return run()
	}
	st.mu.RLock()
	r := st.find(ev)
	st.mu.RUnlock()
	if r == nil && st.subscribers.Load() <= 1 {
		return run()
	}
	if r == nil {
		st.mu.Lock()
		if r = st.find(ev); r == nil { // not added meanwhile
			r = &sharedResult{ev: ev}
			st.recent[st.next] = r
			st.next = (st.next + 1) % len(st.recent)
		}
		st.mu.Unlock()
	}
	r.once.Do(func() { r.resp = encodeShared(run()) })
	if r.resp == nil { // run panicked in another subscriber's goroutine
		return run()
	}
	return r.resp
}

// find returns the kept result of ev, or nil. The caller holds st.mu.
func (st *sharedStream) find(ev any) *sharedResult {
	for _, r := range st.recent {
		if r != nil && r.ev == ev {
			return r
		}
	}
	return nil
}

// encodeShared encodes resp once for all its subscribers. Data then points
// into the encoding, and the buffer Data had goes back to the pool.
func encodeShared(resp *Response) *Response {
	raw := resp.appendJSON(nil)
	n := len(resp.Data)
	resp.release()
	if n > 0 {
		resp.Data = raw[len(raw)-1-n : len(raw)-1 : len(raw)-1]
	}
	resp.raw = raw
	return resp
}
