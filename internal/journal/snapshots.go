package journal

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// A snapshot that fails, at the rotation to its journal (the directory renamed or
// read-only) or at its own write (the disk full), loses nothing: the journal keeps
// every record. But a restart then replays more, and the journal grows. So the
// journal says so (Health), counts the failures (Stats), logs the first at once and
// the rest at most once every failureLogEvery with their count, tries again after a
// delay doubling from retryFirst to retryMax, and refuses writes (Refuses) once what
// a restart would replay reaches BoundFactor times Options.SnapshotBytes, until a
// snapshot succeeds.
const (
	retryFirst      = time.Second
	retryMax        = time.Minute
	failureLogEvery = time.Minute
	// BoundFactor times Options.SnapshotBytes is what a restart may have to replay
	// before writes are refused: room for three snapshots to fail in a row.
	BoundFactor = 4
)

// ErrBound is what Refuses reports: snapshots, failing or slow, have not kept up
// with the writes; Health says why when they fail.
var ErrBound = errors.New("writes are refused for now: snapshots have not kept up with the writes, " +
	"and the journal a restart would replay is at its bound; try again later")

// snapshotHealth is how the journal's snapshots fare; the fields are under
// Journal.mu, but for the counters.
type snapshotHealth struct {
	failing      error // the last failure, nil once a snapshot succeeds
	failingSince time.Time
	failures     int64 // since the last success
	retryAt      time.Time
	retryDelay   time.Duration
	logged       time.Time // when a failure was last logged
	unlogged     int64     // failures not logged since
	refusing     bool      // Refuses has refused a write since the bound was reached

	snapshotFailures atomic.Int64 // ever, for /metrics
	uncovered        atomic.Int64 // journal bytes a restart replays after the snapshot
}

func (j *Journal) bound() int64 { return BoundFactor * j.opts.SnapshotBytes }

// snapshotEnded records how a snapshot ended: err nil, it covers the journal's
// first covers bytes.
func (j *Journal) snapshotEnded(err error, covers int64) {
	now := time.Now()
	j.mu.Lock()
	defer j.mu.Unlock()
	j.snapshotting = false
	if err == nil {
		j.uncovered.Add(-covers)
		if j.failing != nil || j.refusing {
			j.log.Info("snapshot succeeded again; the journal is bounded and takes writes",
				"failures", j.failures, "failingSince", j.failingSince)
		}
		j.failing, j.failures, j.retryDelay, j.retryAt, j.refusing = nil, 0, 0, time.Time{}, false
		return
	}
	j.snapshotFailures.Add(1)
	if j.failing == nil {
		j.failingSince = now
	}
	j.failing, j.failures, j.unlogged = err, j.failures+1, j.unlogged+1
	j.retryDelay = min(max(2*j.retryDelay, retryFirst), retryMax)
	j.retryAt = now.Add(j.retryDelay)
	if j.failures == 1 || now.Sub(j.logged) >= failureLogEvery {
		j.log.Error("snapshot failed; the journal keeps every write, and writes are refused at its bound",
			"error", err, "failures", j.unlogged, "journalBytes", j.uncovered.Load(), "boundBytes", j.bound(), "retryIn", j.retryDelay)
		j.logged, j.unlogged = now, 0
	}
}

// Refuses reports ErrBound when what a restart would replay has reached the bound,
// and then wakes the flusher to try a snapshot again if its delay has passed; the
// host asks before each write.
func (j *Journal) Refuses() error {
	if j.uncovered.Load() < j.bound() {
		return nil
	}
	j.mu.Lock()
	if !j.refusing {
		j.refusing = true
		j.log.Error("the journal is at its bound: snapshots have not kept up, and writes are refused until one completes; "+
			"if they fail, lastFailure and /healthz say why; if they are slow, a larger -snapshot-bytes raises the bound",
			"journalBytes", j.uncovered.Load(), "boundBytes", j.bound(), "lastFailure", j.failing)
	}
	j.mu.Unlock()
	j.nudge()
	return ErrBound
}

// Health says why the journal is degraded, or "" while it is not: snapshots fail,
// and the journal grows towards its bound, or is at it and writes are refused.
func (j *Journal) Health() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	n, bound := j.uncovered.Load(), j.bound()
	var s string
	if j.failing != nil {
		s = fmt.Sprintf("snapshots have failed since %s (attempts failed: %d, the last: %v); ",
			j.failingSince.UTC().Format(time.RFC3339), j.failures, j.failing)
	}
	switch {
	case n >= bound:
		return s + fmt.Sprintf("the journal holds %d bytes, its bound: writes are refused until a snapshot succeeds", n)
	case s != "":
		return s + fmt.Sprintf("the journal keeps every write: %d bytes, writes refused from %d", n, bound)
	}
	return ""
}
