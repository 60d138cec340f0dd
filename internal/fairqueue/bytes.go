package fairqueue

import "sync"

// Bytes bounds the memory that clients' work holds while it waits for a slot
// (request bodies read before their turn, so that a client sending slowly holds no
// slot): each client at most perClient bytes, all clients together at most total.
// It never waits: a Take that does not fit is refused, and the caller refuses the
// work.
type Bytes struct {
	perClient, total int64

	mu       sync.Mutex
	used     int64
	byClient map[string]int64
}

// NewBytes returns a bound of perClient bytes a client and total bytes in all.
func NewBytes(perClient, total int64) *Bytes {
	return &Bytes{perClient: perClient, total: total, byClient: map[string]int64{}}
}

// Take counts n more bytes as client's and reports true, or reports false, counting
// nothing, when client or all clients together would hold more than their bound.
// perClient is the reason when that is what would be passed.
func (b *Bytes) Take(client string, n int64) (ok, perClient bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	held := b.byClient[client]
	switch {
	case held+n > b.perClient:
		return false, true
	case b.used+n > b.total:
		return false, false
	}
	b.byClient[client] = held + n
	b.used += n
	return true, false
}

// Give counts n of client's bytes back.
func (b *Bytes) Give(client string, n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if held := b.byClient[client] - n; held > 0 {
		b.byClient[client] = held
	} else {
		delete(b.byClient, client)
	}
}

// Held returns the bytes all clients hold together.
func (b *Bytes) Held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
