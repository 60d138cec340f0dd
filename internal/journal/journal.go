// Package journal keeps a state durably in a directory: a snapshot and the records
// appended since, rebuilt after kill -9 or a power cut exactly as its writers were
// told. Records are opaque; their meaning, capture, restore and undo are the Host's.
//
// It guarantees:
//   - A record whose Pending.Wait returned nil is on disk, with its file's growth
//     and name, and Open replays it after those appended before it.
//   - Appends waiting together share one fsync; Record.Stored runs once the record
//     is on disk, in append order.
//   - When the disk fails, every record not on disk is undone, newest first, before
//     any writer is answered; then Wait and Close report ErrFailed until DIR is
//     opened again, and what the failed batch wrote is zeroed.
//   - Open cuts away, with a warning, the torn tail a crash leaves of the group
//     commit it interrupted, and refuses any other damage with one line naming the
//     file and offset (a snapshot missing, cut or corrupt; a journal missing,
//     foreign or damaged), unless Options.Repair cuts it there, keeping the bytes
//     cut beside it (docs/durability.md).
//   - DIR/LOCK is held with flock while a Journal is open.
//   - A snapshot that fails (its rotation or its write) loses nothing: the journal
//     keeps every record, says so (Health), counts it (Stats), and tries again later;
//     once a restart would replay BoundFactor times SnapshotBytes, Refuses refuses
//     writes until a snapshot succeeds (snapshots.go).
//
// DIR holds LOCK, snapshot (the state as of journal <gen>, and the store's random
// id) and journal-<gen>.log files, each headed by its generation and that id; Open
// replays exactly journals <gen>, <gen>+1, ... of that store. A journal is written
// whole as a .tmp and renamed into place, and grows in whole steps (journalStep),
// each durable before a record is written into it: so a crash leaves only the last
// record torn, followed by zeros, and any other cut shows.
//
// A payload must not end in a zero byte (tornTail) nor start as a journal header
// does (journalHeaderStart); the store's JSON meets both.
package journal

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultSnapshotBytes is the journal size past which a snapshot is taken.
const DefaultSnapshotBytes = 64 << 20

// Options tune Open.
type Options struct {
	SnapshotBytes int64 // 0 means DefaultSnapshotBytes
	// Repair cuts a damaged journal at its damage, saving the bytes cut (and any
	// later journal) beside it, instead of refusing to start.
	Repair   bool
	WrapFile func(File) File // wraps every journal file written (tests inject failures)
}

// File is what the journal writes through: an *os.File, or a test's failing one.
type File interface {
	WriteAt(p []byte, off int64) (int, error)
	Sync() error
	Truncate(size int64) error
	Close() error
}

// Host is the state a journal keeps. It appends under a lock of its own, which
// orders the records as its state changed.
type Host interface {
	// Seed fills the host when DIR holds no store.
	Seed() error
	// Restore fills the host from the snapshot: header is the JSON object of
	// Capture's meta with "gen" and "store" added; body is Capture's body.
	Restore(header, body []byte) error
	// Replay applies one record's payload; an error, leaving the host as it was,
	// says the record is damaged.
	Replay(payload []byte) error
	// Capture, holding the host's lock so no Append runs, calls mark once and
	// captures the state; encode, run later on another goroutine, returns meta (a
	// JSON object whose fields go into the snapshot's header) and the body.
	Capture(mark func()) (encode func() (meta, body []byte, err error))
	// Failed, when the disk failed, holds the host's lock so no Append follows,
	// and calls rollback, which undoes every record not stored.
	Failed(rollback func())
}

// Record is one Append.
type Record interface {
	// Payload encodes the record, on the flusher after Append returned: what it
	// encodes must not change once appended.
	Payload() ([]byte, error)
	Stored() // the record is on disk and its writer released; in append order
	Undo()   // roll the record back; Host.Failed's rollback calls it, newest first
}

// ErrFailed is what Wait and Close report after the disk failed: what of the
// failed batch reached the journal is uncertain until DIR is opened again.
var ErrFailed = errors.New("journal write failed; writes are refused until a restart")

var errClosed = errors.New("the journal is closed")

// Journal is an open DIR: the append-only log of records and its flusher.
type Journal struct {
	dir  string
	log  *slog.Logger
	host Host
	opts Options
	lock *os.File

	mu           sync.Mutex
	queue        []*Pending
	closing      bool
	snapshotting bool
	wake         chan struct{}
	stopped      chan struct{}
	snapshots    sync.WaitGroup

	storeID string // in the snapshot and every journal's header

	// Owned by the flusher goroutine.
	file   File
	gen    uint64
	size   int64 // where the durable records end
	alloc  int64 // the file's size, whole steps; past size it holds zeros
	step   int64 // what the file grows by, as its header says
	dirty  int64 // bytes past size a write in progress may have changed
	failed bool  // the disk failed: nothing more is written

	writes, syncs atomic.Int64 // records written, fsyncs made; /metrics reads them

	snapshotHealth // snapshots.go
}

// Pending is an appended record waiting for its fsync or, without a record, the
// mark where the journal rotates to journal gen, done once the new file exists.
type Pending struct {
	rec    Record
	done   sync.WaitGroup // a channel would be an allocation more per write
	err    error
	gen    uint64
	covers int64 // a mark's: the journal bytes before it, which its snapshot covers
}

// Wait waits until the record is on disk, or says why not: ErrFailed (the record
// was undone), or that the journal was closed before the Append.
func (p *Pending) Wait() error {
	p.done.Wait()
	return p.err
}

// Open opens the journal in dir, creating dir if need be, and holds it until
// Close: a dir holding no store (Has) is seeded from h, otherwise h is restored.
func Open(dir string, log *slog.Logger, opts Options, h Host) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is in use by another quartet process", dir)
		}
		return nil, err
	}
	opts.SnapshotBytes = cmp.Or(opts.SnapshotBytes, DefaultSnapshotBytes)
	j := &Journal{dir: dir, log: log, host: h, opts: opts, lock: lock, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	if err := j.open(); err != nil {
		lock.Close()
		return nil, err
	}
	go j.flush()
	return j, nil
}

func (j *Journal) open() error {
	existing, err := Has(j.dir)
	if err != nil {
		return err
	}
	if existing {
		return j.recover()
	}
	if err := j.host.Seed(); err != nil {
		return err
	}
	// The first journal is written before the snapshot and renamed into place
	// after it: a crash before leaves no store, one between leaves a journal that
	// recover puts in place; so a journal without its snapshot was damaged.
	j.storeID = newStoreID()
	f, end, err := writeJournal(j.dir, 1, j.storeID, nil)
	if err != nil {
		return err
	}
	if err := writeSnapshot(j.dir, 1, j.storeID, j.host.Capture(func() {})); err != nil {
		f.Close()
		return fmt.Errorf("writing the first snapshot: %w", err)
	}
	if err := publishJournal(j.dir, 1); err != nil {
		f.Close()
		return err
	}
	j.use(f, 1, end, roundUp(end, journalStep), journalStep)
	return nil
}

// Append queues r behind every record appended before it; the caller holds the
// host's lock.
func (j *Journal) Append(r Record) *Pending {
	w := &Pending{rec: r}
	j.mu.Lock()
	if j.closing {
		j.mu.Unlock()
		w.err = errClosed
		return w
	}
	w.done.Add(1)
	j.queue = append(j.queue, w)
	j.mu.Unlock()
	j.nudge()
	return w
}

// nudge wakes the flusher, unless a wake-up is pending already.
func (j *Journal) nudge() {
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

// Stats are a journal's figures for /metrics.
type Stats struct {
	Writes, Fsyncs   int64 // records written, and the fsyncs that made them durable
	SnapshotFailures int64 // snapshots that failed, at their rotation or their write
	Bytes            int64 // journal bytes a restart replays after the snapshot
}

// Stats returns the journal's figures.
func (j *Journal) Stats() Stats {
	return Stats{j.writes.Load(), j.syncs.Load(), j.snapshotFailures.Load(), j.uncovered.Load()}
}

// flush is the flusher goroutine: it writes what is queued, one fsync a batch.
func (j *Journal) flush() {
	defer close(j.stopped)
	var buf []byte
	for {
		j.mu.Lock()
		batch, closing := j.queue, j.closing
		j.queue = nil
		j.mu.Unlock()
		if len(batch) > 1 {
			// Let the writers already running join this fsync; a lone one is not delayed.
			runtime.Gosched()
			j.mu.Lock()
			batch = append(batch, j.queue...)
			j.queue = nil
			j.mu.Unlock()
		}
		if len(batch) == 0 {
			if closing {
				return
			}
			<-j.wake
			j.maybeSnapshot() // a write refused at the bound woke it to try again
			continue
		}
		if j.failed {
			// The host refuses writes after a failure; anything queued is undone.
			j.fail(batch, ErrFailed)
			continue
		}
		buf = buf[:0]
		var err error
		start := 0
		for i, w := range batch {
			if w.rec != nil {
				j.writes.Add(1)
				payload, pErr := w.rec.Payload()
				if pErr != nil {
					err = pErr
				}
				buf = appendRecord(buf, payload)
				continue
			}
			// Everything before the marker belongs to the old journal.
			if err = j.writeAndSync(buf, err); err != nil {
				break
			}
			j.release(batch[start:i])
			buf, start = buf[:0], i+1
			w.covers = j.uncovered.Load()
			w.err = j.rotate(w.gen)
			w.done.Done()
		}
		if err == nil {
			err = j.writeAndSync(buf, nil)
		}
		if err != nil {
			j.fail(batch[start:], err)
			continue
		}
		j.release(batch[start:])
		j.maybeSnapshot()
	}
}

// writeAndSync appends buf to the journal and fsyncs it, unless err, an encoding
// failure, stands for the write. It is the one place the journal being written is
// fsynced, so every failed fsync fails the journal (fail): one that failed may have
// dropped what it was to make durable, and no later one would vouch for it.
func (j *Journal) writeAndSync(buf []byte, err error) error {
	if err != nil || len(buf) == 0 {
		return err
	}
	if end := j.size + int64(len(buf)); end > j.alloc {
		// The file grows durably first: a record running past its end is a cut.
		alloc := roundUp(end, j.step)
		if err := j.file.Truncate(alloc); err != nil {
			return err
		}
		if err := j.file.Sync(); err != nil {
			return err
		}
		j.alloc = alloc
	}
	j.dirty = int64(len(buf))
	if _, err := j.file.WriteAt(buf, j.size); err != nil {
		return err
	}
	j.syncs.Add(1)
	if err := j.file.Sync(); err != nil {
		return err
	}
	j.size += int64(len(buf))
	j.uncovered.Add(int64(len(buf)))
	j.dirty = 0
	return nil
}

// release answers the writers of a batch of records on disk, then tells of them.
func (j *Journal) release(batch []*Pending) {
	for _, w := range batch {
		w.done.Done()
	}
	for _, w := range batch {
		w.rec.Stored()
	}
}

// fail handles a storage failure while rest waited for the disk: nothing is
// written from then on; what the batch wrote is zeroed again; every record not on
// disk is undone under the host's lock, newest first, so no reader sees a write
// its writer was told failed; then the writers are answered (the cause is logged).
func (j *Journal) fail(rest []*Pending, cause error) {
	if !j.failed {
		j.failed = true
		j.log.Error("journal write failed; the writes not stored are rolled back and further writes refused until a restart",
			"error", cause, "rolledBack", countRecords(rest))
		if j.dirty > 0 {
			// Zeroed rather than cut off: the file keeps its size, whole steps.
			if _, err := j.file.WriteAt(make([]byte, j.dirty), j.size); err != nil {
				// Logged only: Open then finds these records whole or torn, and
				// either is right, since their writers were told nothing was stored.
				j.log.Error("zeroing the failed write in the journal failed", "error", err)
			}
		}
	}
	j.host.Failed(func() {
		j.mu.Lock()
		rest = append(rest, j.queue...) // nothing joins the queue now: the host refuses writes
		j.queue = nil
		j.mu.Unlock()
		for i := len(rest) - 1; i >= 0; i-- {
			if w := rest[i]; w.rec != nil {
				w.rec.Undo()
			}
		}
	})
	for _, w := range rest {
		w.err = ErrFailed
		w.done.Done()
	}
}

func countRecords(ws []*Pending) int {
	n := 0
	for _, w := range ws {
		if w.rec != nil {
			n++
		}
	}
	return n
}

// maybeSnapshot starts a snapshot when the journal is past the threshold and no
// failed one is waiting to be tried again; the state is captured and the rotation
// mark queued under the host's lock, so the snapshot holds exactly the records
// before the mark.
func (j *Journal) maybeSnapshot() {
	j.mu.Lock()
	due := j.uncovered.Load() >= j.opts.SnapshotBytes && !j.snapshotting && !j.closing && !j.failed && !time.Now().Before(j.retryAt)
	if due {
		j.snapshotting = true
	}
	j.mu.Unlock()
	if !due {
		return
	}
	gen := j.gen + 1
	mark := &Pending{gen: gen}
	mark.done.Add(1)
	encode := j.host.Capture(func() {
		j.mu.Lock()
		j.queue = append(j.queue, mark)
		j.mu.Unlock()
	})
	j.snapshots.Go(func() {
		err := mark.Wait()
		if errors.Is(err, ErrFailed) { // the journal failed, and said so
			j.mu.Lock()
			j.snapshotting = false
			j.mu.Unlock()
			return
		}
		if err == nil {
			if err = writeSnapshot(j.dir, gen, j.storeID, encode); err != nil {
				err = fmt.Errorf("writing the snapshot: %w", err)
			}
		}
		j.snapshotEnded(err, mark.covers)
		if err == nil {
			removeJournalsBefore(j.dir, gen, j.log)
		}
	})
}

// rotate starts journal gen, in place and durable before its snapshot is written,
// and closes the current one, every byte of which writeAndSync made durable. When
// it fails, the current journal goes on taking the records.
func (j *Journal) rotate(gen uint64) error {
	f, end, err := createJournal(j.dir, gen, j.storeID, nil)
	if err != nil {
		return fmt.Errorf("starting %s: %w", journalName(gen), err)
	}
	if err := j.file.Close(); err != nil { // logged only: everything in it was fsynced
		j.log.Error("closing the previous journal", "file", filepath.Join(j.dir, journalName(j.gen)), "error", err)
	}
	j.use(f, gen, end, roundUp(end, journalStep), journalStep)
	return nil
}

// use makes f, journal gen, the one written to: records end at end, the file is
// alloc bytes long and grows by step.
func (j *Journal) use(f *os.File, gen uint64, end, alloc, step int64) {
	var file File = f
	if j.opts.WrapFile != nil {
		file = j.opts.WrapFile(f)
	}
	j.file, j.gen, j.size, j.alloc, j.step = file, gen, end, alloc, step
}

// Close writes what is queued, waits for a running snapshot, and releases DIR.
// Appends after it are refused.
func (j *Journal) Close() error {
	j.mu.Lock()
	j.closing = true
	j.mu.Unlock()
	j.nudge()
	<-j.stopped
	j.log.Info("journal closed", "writes", j.writes.Load(), "fsyncs", j.syncs.Load())
	j.snapshots.Wait()
	err := ErrFailed
	if !j.failed {
		err = j.file.Sync()
	}
	if cerr := j.file.Close(); err == nil {
		err = cerr
	}
	j.lock.Close() // closing the descriptor drops the flock
	return err
}
