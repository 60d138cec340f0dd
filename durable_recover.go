package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Start-up of a durable store: the snapshot is loaded and the journals after it are
// replayed, telling a write torn by a crash (cut away) from damage (refused, or cut
// with -repair).

// tornTail reports whether tail, what follows the last intact record of the last
// journal, is what a crash leaves of a write that was never acknowledged: the start of
// a record cut short (a header incomplete, or an intact header whose record runs past
// the end), followed by nothing or by zeros (a file extended whose data never reached
// the disk). A complete record whose checksum fails is not that but an acknowledged
// write damaged on disk, and so is anything else.
func tornTail(tail []byte) bool {
	p := bytes.TrimRight(tail, "\x00") // a record's payload, JSON, never ends in a zero
	if len(p) < recordHeaderSize {
		return true
	}
	h := p[:recordHeaderSize]
	if crc32.Checksum(h[:8], castagnoli) != binary.LittleEndian.Uint32(h[8:]) {
		return false
	}
	return int64(len(p)-recordHeaderSize) < int64(binary.LittleEndian.Uint32(h[0:]))
}

// validRecordAfter reports whether an intact record starts anywhere after off.
func validRecordAfter(data []byte, off int) (int, bool) {
	for q := off + 1; q+recordHeaderSize <= len(data); q++ {
		if _, _, ok := readRecord(data, q); ok {
			return q, true
		}
	}
	return 0, false
}

// recover loads the snapshot and replays the journals after it. Damage at the very end
// of the last journal is a write torn by a crash: it was never acknowledged, so it is
// cut away with one log line. Damage anywhere else refuses to start.
func (j *journal) recover() error {
	s := j.store
	snapshot := filepath.Join(j.dir, "snapshot")
	gens, err := journalGens(j.dir)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(snapshot)
	var st snapshotState
	switch {
	case err == nil:
		if err := readSnapshot(data, &st); err != nil {
			return fmt.Errorf("%s %v; restore it from a backup", snapshot, err)
		}
	case errors.Is(err, os.ErrNotExist) && len(gens) > 0:
		// A snapshot is written before the first journal exists, and replaced
		// only by renaming a newer one over it.
		return fmt.Errorf("%s is missing, but %s follows a snapshot; restore the snapshot from a backup (starting without it would reuse ids and serve the journal's changes over an empty store)",
			snapshot, journalName(gens[0]))
	default:
		return err
	}
	s.restore(&st)
	j.storeID = st.Store
	gens = slices.DeleteFunc(gens, func(g uint64) bool { return g < st.Gen })
	switch {
	case len(gens) == 0 || gens[0] != st.Gen:
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
		if cut { // -repair moved the later journals aside
			gens = gens[:i+1]
			break
		}
	}
	j.gen = gens[len(gens)-1]
	f, err := os.OpenFile(filepath.Join(j.dir, journalName(j.gen)), os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	info, err := f.Stat()
	if err == nil && info.Size() == 0 {
		// Created, but its header never reached the disk (or -repair cut it).
		_, err = writeJournalHeader(f, j.gen, j.storeID)
		if err == nil {
			info, err = f.Stat()
		}
	}
	if err != nil {
		f.Close()
		return err
	}
	j.file, j.size = j.wrap(f), info.Size()
	return nil
}

// replay applies journal gen, which later journals follow, checking that its header
// names it and store. A torn tail of the last
// journal (see tornTail) is cut away with one log line. Other damage refuses to start,
// naming the offset, unless -repair is given: then the journal is cut there (see cut)
// and cut reports true.
func (j *journal) replay(gen uint64, later []uint64, store string) (cut bool, err error) {
	path := filepath.Join(j.dir, journalName(gen))
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	off := 0
	if payload, next, ok := readRecord(data, 0); ok {
		var h journalHeader
		switch {
		case !bytes.HasPrefix(payload, journalHeaderStart):
			return false, fmt.Errorf("%s does not follow from the snapshot (it has no header; the snapshot is of store %q); restore the directory from a backup", path, store)
		case json.Unmarshal(payload, &h) != nil || h.Journal != gen || h.Store != store:
			return false, fmt.Errorf("%s does not follow from the snapshot (its header says journal %d of store %q; the snapshot is of store %q); restore the directory from a backup", path, h.Journal, h.Store, store)
		default:
			off = next
		}
	}
	for off < len(data) {
		payload, next, ok := readRecord(data, off)
		if !ok && len(later) == 0 && tornTail(data[off:]) {
			j.log.Warn("journal ends in a torn write, which was never acknowledged; cutting it away",
				"file", path, "offset", off, "bytes", len(data)-off)
			return false, os.Truncate(path, int64(off))
		}
		var c change
		if ok {
			dec := json.NewDecoder(bytes.NewReader(payload))
			dec.DisallowUnknownFields()
			ok = dec.Decode(&c) == nil && c.valid()
		}
		if !ok {
			if j.repair {
				return true, j.cut(path, data, off, later)
			}
			what := "a record fails its checksum"
			if _, _, intact := readRecord(data, off); intact {
				what = "a record holds no valid change"
			} else if at, found := validRecordAfter(data, off); found {
				what += fmt.Sprintf("; intact records follow at byte %d", at)
			}
			return false, fmt.Errorf("%s is corrupt at byte %d (%s); restore the directory from a backup, or start with -repair to cut the journal there (keeping the cut bytes beside it)", path, off, what)
		}
		j.store.apply(&c)
		off = next
	}
	return false, nil
}

// cut is -repair: it keeps data[:off] as the journal at path, after saving the rest
// to a side file, and moves the later journals aside too, since their changes follow
// from what is cut. Nothing is deleted; the log says what was cut and where it went.
func (j *journal) cut(path string, data []byte, off int, later []uint64) error {
	suffix := ".cut-" + time.Now().UTC().Format("20060102T150405.000000000Z")
	side := path + suffix
	if err := writeFileSync(side, data[off:]); err != nil {
		return fmt.Errorf("-repair: saving the bytes to cut: %w", err)
	}
	if err := os.Truncate(path, int64(off)); err != nil {
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
		"file", path, "offset", off, "bytes", len(data)-off, "savedTo", side, "laterJournalsMoved", moved)
	return nil
}

// writeFileSync writes a new file and makes it durable.
func writeFileSync(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// valid reports whether c can be applied: replay must never panic on a record
// that passed its checksum but does not make sense.
func (c *change) valid() bool {
	switch c.Op {
	case opPutUsers:
		return len(c.Users) > 0 && !slices.Contains(c.Users, nil)
	case opDeleteUser:
		return c.DeleteID > 0
	case opPutPost:
		return c.Post != nil
	case opPutComment:
		return c.Comment != nil
	case opPutOrder:
		return c.Order != nil
	case opPutProduct:
		return c.Product != nil
	}
	return false
}
