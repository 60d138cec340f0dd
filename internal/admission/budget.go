package admission

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Budget is an amount clients claim parts of and release: bytes, sockets,
// operations. Each client holds at most perClient, all together at most total
// (0: no bound of that kind). A claim that does not fit is refused at once,
// never waited for, and logged at most once per logEvery.
type Budget struct {
	name             string // what is counted, for refusals: "WebSocket connections"
	perClient, total int64

	mu       sync.Mutex
	used     int64
	byClient map[string]int64
	log      tally
}

// NewBudget returns a budget of name; log (nil: none) gets its refusals.
func NewBudget(name string, perClient, total int64, log *slog.Logger) *Budget {
	return &Budget{name: name, perClient: perClient, total: total, byClient: map[string]int64{},
		log: tally{log: log, level: slog.LevelWarn, msg: name + " refused: over budget"}}
}

// Refused is a claim a budget did not take. The surfaces answer it in their
// format: 429 with Retry-After, ResourceExhausted, a WebSocket error message.
type Refused struct {
	Client    string
	perClient bool // the client's own bound, rather than the total
	msg       string
}

func (e *Refused) Error() string { return e.msg }

// Claim counts n more as client's, or returns a *Refused and counts nothing. A nil
// Budget takes everything.
func (b *Budget) Claim(client string, n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	b.mu.Lock()
	held := b.byClient[client]
	perClient := b.perClient > 0 && held+n > b.perClient
	if perClient || b.total > 0 && b.used+n > b.total {
		b.mu.Unlock()
		return b.refuse(client, perClient)
	}
	b.byClient[client] = held + n
	b.used += n
	b.mu.Unlock()
	return nil
}

func (b *Budget) refuse(client string, perClient bool) *Refused {
	if perClient {
		b.log.add(slog.String("last_client", client), slog.Int64("limit", b.perClient), slog.String("bound", "per client"))
		return &Refused{client, true, fmt.Sprintf("too many %s from %s: at most %d at once; try again shortly", b.name, client, b.perClient)}
	}
	b.log.add(slog.String("last_client", client), slog.Int64("limit", b.total), slog.String("bound", "total"))
	return &Refused{client, false, fmt.Sprintf("too many %s over all clients: at most %d at once; try again shortly", b.name, b.total)}
}

// Release counts n of client's back.
func (b *Budget) Release(client string, n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if held := b.byClient[client] - n; held > 0 {
		b.byClient[client] = held
	} else {
		delete(b.byClient, client)
	}
	b.mu.Unlock()
}

// Held returns what all clients hold together.
func (b *Budget) Held() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Close writes what the refusal log holds back; nothing is logged after it.
func (b *Budget) Close() {
	if b != nil {
		b.log.flush()
	}
}

// logEvery spaces the log lines of one kind of refusal: an attack logs a line
// and a count, not a line per refusal.
const logEvery = time.Minute

// tally logs one kind of event at most once per logEvery: the first at once, the
// rest as a count when the interval is over.
type tally struct {
	log   *slog.Logger // nil: nothing is logged
	level slog.Level
	msg   string

	mu     sync.Mutex
	logged time.Time   // when the last line was written
	held   int         // events since, not logged yet
	last   []slog.Attr // the last event's
	timer  *time.Timer // writes what is held when the interval is over
	done   bool        // flushed for good
}

func (t *tally) add(attrs ...slog.Attr) {
	if t.log == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return
	}
	t.held++
	t.last = attrs
	if since := time.Since(t.logged); since >= logEvery {
		t.writeLocked()
	} else if t.timer == nil {
		t.timer = time.AfterFunc(logEvery-since, func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.timer = nil
			if !t.done {
				t.writeLocked()
			}
		})
	}
}

func (t *tally) writeLocked() {
	if t.held == 0 {
		return
	}
	t.log.LogAttrs(context.Background(), t.level, t.msg, append([]slog.Attr{slog.Int("count", t.held)}, t.last...)...)
	t.held, t.logged = 0, time.Now()
}

// flush logs what is held, and nothing after.
func (t *tally) flush() {
	if t.log == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	t.writeLocked()
}

// ByClient reports whether the client's own bound refused the claim, rather
// than the total: a surface may answer the two apart (429, 503).
func (e *Refused) ByClient() bool { return e.perClient }
