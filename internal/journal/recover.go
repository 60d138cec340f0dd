package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// tornTail reports whether tail, what follows the last journal's last intact record,
// is what a crash leaves of the group commit it interrupted: the start of a record
// (part of its header, or an intact header and part of its payload) followed by
// zeros, within the file. A complete record failing its checksum is damage, and a
// record running past the end of the file a cut.
func tornTail(tail []byte) bool {
	p := bytes.TrimRight(tail, "\x00") // a record's payload never ends in a zero
	switch {
	case len(p) == 0 || len(tail) < recordHeaderSize:
		return false
	case len(p) < recordHeaderSize:
		return true
	}
	return recordRunsPast(p) && !recordRunsPast(tail)
}

// validRecordAfter finds an intact record anywhere after off.
func validRecordAfter(data []byte, off int) (int, bool) {
	data = bytes.TrimRight(data, "\x00") // a journal's unwritten space holds none
	for q := off + 1; q+recordHeaderSize <= len(data); q++ {
		if _, _, ok := readRecord(data, q); ok {
			return q, true
		}
	}
	return 0, false
}

// recover restores the snapshot and replays the journals after it.
func (j *Journal) recover() error {
	snapshot := filepath.Join(j.dir, "snapshot")
	gens, err := journalGens(j.dir)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(snapshot)
	var st snapshotHeader
	switch {
	case err == nil:
		var header, body []byte
		if st, header, body, err = readSnapshot(data); err == nil {
			if err = j.host.Restore(header, body); err != nil {
				err = fmt.Errorf("is unreadable: %v", err)
			}
		}
		if err != nil {
			return fmt.Errorf("%s %v; restore it from a backup", snapshot, err)
		}
	case errors.Is(err, os.ErrNotExist) && len(gens) > 0:
		// Never a start cut short: the first journal is renamed into place after the
		// first snapshot, and a snapshot is replaced only by renaming a newer one over it.
		return fmt.Errorf("%s is missing, but %s follows a snapshot; restore the snapshot from a backup (starting without it would reuse ids and serve the journal's changes over an empty store)",
			snapshot, journalName(gens[0]))
	default:
		return err
	}
	j.storeID = st.Store
	gens = slices.DeleteFunc(gens, func(g uint64) bool { return g < st.Gen })
	if len(gens) == 0 && st.Gen == 1 {
		// The first start stopped before renaming the first journal into place.
		switch err := publishJournal(j.dir, 1); {
		case err == nil:
			j.log.Info("the first start stopped before its journal was in place; put it there", "file", filepath.Join(j.dir, journalName(1)))
			gens = []uint64{1}
		case !errors.Is(err, os.ErrNotExist):
			return err
		}
	}
	if len(gens) == 0 || gens[0] != st.Gen {
		return fmt.Errorf("%s is missing: the snapshot is followed by it; restore the directory from a backup", filepath.Join(j.dir, journalName(st.Gen)))
	}
	for i := 1; i < len(gens); i++ {
		if gens[i] != gens[i-1]+1 {
			return fmt.Errorf("%s is missing: %s follows it; restore the directory from a backup", filepath.Join(j.dir, journalName(gens[i-1]+1)), journalName(gens[i]))
		}
	}
	for i, g := range gens {
		cut, err := j.replay(g, gens[i+1:], st.Store)
		if err != nil {
			return err
		}
		j.uncovered.Add(j.size)
		if cut { // Repair moved the later journals aside
			gens = gens[:i+1]
			break
		}
	}
	gen := gens[len(gens)-1]
	f, err := os.OpenFile(filepath.Join(j.dir, journalName(gen)), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	j.use(f, gen, j.size, info.Size(), j.step)
	return nil
}

// replay applies journal gen, which later journals follow, checking that its header
// names it and store, and leaves in j.size and j.step where its records end and its
// step. A torn tail of the last journal is cut away; other damage refuses to start,
// or with Repair is cut there, and cut reports true.
func (j *Journal) replay(gen uint64, later []uint64, store string) (cut bool, err error) {
	path := filepath.Join(j.dir, journalName(gen))
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	start, step := 0, int64(journalStep) // start stays 0 while the header is not intact
	if payload, next, ok := readRecord(data, 0); ok {
		var h journalHeader
		switch {
		case !bytes.HasPrefix(payload, journalHeaderStart):
			return false, fmt.Errorf("%s does not follow from the snapshot (it has no header; the snapshot is of store %q); restore the directory from a backup", path, store)
		case json.Unmarshal(payload, &h) != nil || h.Journal != gen || h.Store != store:
			return false, fmt.Errorf("%s does not follow from the snapshot (its header says journal %d of store %q; the snapshot is of store %q); restore the directory from a backup", path, h.Journal, h.Store, store)
		case h.Step <= 0:
			return false, fmt.Errorf("%s was written by an earlier version (its header names no step of growth), which this one does not read", path)
		}
		start, step = next, h.Step
	}
	end := start // where the intact records end
	for start > 0 && end < len(data) {
		payload, next, ok := readRecord(data, end)
		if !ok || j.host.Replay(payload) != nil {
			break
		}
		end = next
	}
	rest := data[end:]
	whole := len(data) > 0 && int64(len(data))%step == 0
	switch {
	case start > 0 && whole && len(bytes.TrimRight(rest, "\x00")) == 0:
		j.size, j.step = int64(end), step // the rest is the file's unwritten space
		return false, nil
	case start > 0 && whole && len(later) == 0 && tornTail(rest):
		j.log.Warn("journal ends in an incomplete record followed by zeros, as a crash leaves the group commit it interrupted; cutting it away",
			"file", path, "offset", end, "bytes", len(bytes.TrimRight(rest, "\x00")))
		return false, j.rewrite(gen, store, data[start:end])
	case j.opts.Repair:
		return true, j.cut(path, gen, store, data, start, end, later)
	}
	const advice = "restore the directory from a backup, or start with -repair to cut the journal there (keeping the cut bytes beside it)"
	switch {
	case !whole:
		return false, fmt.Errorf("%s is cut short: it is %d bytes, but a journal is created holding its header and grows by whole steps of %d bytes; what it held after byte %d is lost, acknowledged changes possibly among it; %s", path, len(data), step, end, advice)
	case recordRunsPast(rest) || len(rest) < recordHeaderSize:
		return false, fmt.Errorf("%s is cut short: its record at byte %d runs past the end of the file, but a journal grows before a record is written past its end; what it held after byte %d is lost, acknowledged changes possibly among it; %s", path, end, end, advice)
	}
	what := "a record fails its checksum"
	if _, _, intact := readRecord(data, end); intact {
		what = "a record holds no valid change"
	} else if at, found := validRecordAfter(data, end); found {
		what += fmt.Sprintf("; intact records follow at byte %d", at)
	}
	return false, fmt.Errorf("%s is corrupt at byte %d (%s); %s", path, end, what, advice)
}

// rewrite replaces journal gen of store with one holding records.
func (j *Journal) rewrite(gen uint64, store string, records []byte) error {
	f, end, err := createJournal(j.dir, gen, store, records)
	if err != nil {
		return err
	}
	j.size, j.step = end, journalStep
	return f.Close()
}

// cut is Repair: journal gen at path, data, is damaged at byte end. It keeps the
// records from start to end as that journal, after saving what follows them (but
// the trailing zeros) to a side file, and moves the later journals aside too.
// Nothing is deleted; the log says what was cut and where it went.
func (j *Journal) cut(path string, gen uint64, store string, data []byte, start, end int, later []uint64) error {
	suffix := ".cut-" + time.Now().UTC().Format("20060102T150405.000000000Z")
	side := path + suffix
	rest := bytes.TrimRight(data[end:], "\x00")
	if len(rest) == 0 { // cut where the file was cut: nothing to keep
		side = ""
	} else if err := writeFileSync(side, rest, os.O_EXCL); err != nil {
		return fmt.Errorf("-repair: saving the bytes to cut: %w", err)
	}
	if err := j.rewrite(gen, store, data[start:end]); err != nil {
		return fmt.Errorf("-repair: %w", err)
	}
	moved := []string{}
	for _, g := range later {
		name := filepath.Join(j.dir, journalName(g))
		if err := os.Rename(name, name+suffix); err != nil {
			return fmt.Errorf("-repair: %w", err)
		}
		moved = append(moved, name+suffix)
	}
	if err := syncDir(j.dir); err != nil {
		return err
	}
	j.log.Warn("-repair: the journal is damaged; cut it there, dropping the changes from that point on",
		"file", path, "offset", end, "bytes", len(rest), "savedTo", side, "laterJournalsMoved", moved)
	return nil
}
