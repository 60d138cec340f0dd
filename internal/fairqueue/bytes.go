package fairqueue

import "sync"

// Bytes bounds the memory clients' work holds while it waits for a slot (bodies
// read ahead): perClient bytes a client, total in all. A Take that does not fit is
// refused, never waited for.
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

// Take counts n more bytes as client's, or reports false, counting nothing, when a
// bound would be passed; perClient says it was the client's.
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
