package jsonscan

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"quartet/internal/jsonkeys"
)

// segmentElems is how many elements of a list one processor decodes at a time.
const segmentElems = 8192

// List reads the list called name, the top object's value of that key, into dst,
// decoding each element with decode; [] gives an empty list, null leaves dst.
//
// A long list is first measured by its brackets and strings alone (listShape) and
// decoded in place into a slice of its length, in segments on every processor
// (bench/README.md, "Start-up"). The segments count only if they join up, each
// ending just before the next one's start; otherwise (a malformed list, a failed
// segment) the list is decoded again in one pass, whose result and first error
// are the answer. So decode must give the same result wherever it starts.
func List[T any](d *Scanner, name string, dst *[]T, decode func(*Scanner, Loc, *T) error) error {
	if d.null() {
		return nil
	}
	*dst = []T{} // [] is an empty list, not an absent one
	if more, err := d.openArray(Loc{list: name, i: -1}); !more || err != nil {
		return err
	}
	if shape, ok := listShape(d.data, d.pos, d.segment); ok {
		list := make([]T, shape.n)
		if inSegments(d, shape, list, name, decode) {
			*dst = list
			d.pos = shape.end + 1
			return nil
		}
	}
	var list []T
	err := d.elements(func(i int) error {
		list = append(list, *new(T))
		return decode(d, Loc{list: name, i: i}, &list[i])
	})
	*dst = list
	return err
}

// inSegments decodes the elements of list name into elems in segments on every
// processor and reports whether every segment decoded and they joined up.
func inSegments[T any](d *Scanner, shape listShapeOf, elems []T, name string, decode func(*Scanner, Loc, *T) error) bool {
	joined := make([]bool, len(shape.starts))
	var next atomic.Int64
	work := func() {
		for k := int(next.Add(1)) - 1; k < len(shape.starts); k = int(next.Add(1)) - 1 {
			first := k * shape.every
			seg := &Scanner{data: d.data, pos: shape.starts[k], name: d.name}
			if !decodeSegment(seg, elems[first:min(first+shape.every, len(elems))], first, name, decode) {
				continue
			}
			if k+1 < len(shape.starts) {
				joined[k] = seg.next() == ',' && seg.pos+1 == shape.starts[k+1]
			} else {
				joined[k] = seg.next() == ']' && seg.pos == shape.end
			}
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(shape.starts)) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	return !slices.Contains(joined, false)
}

// decodeSegment decodes elements of list name from d.pos into elems, numbered from first.
func decodeSegment[T any](d *Scanner, elems []T, first int, name string, decode func(*Scanner, Loc, *T) error) bool {
	for i := range elems {
		if i > 0 {
			if d.next() != ',' {
				return false
			}
			d.pos++
		}
		if decode(d, Loc{list: name, i: first + i}, &elems[i]) != nil {
			return false
		}
	}
	return true
}

// listShapeOf is where a list's elements seem to be, by listShape.
type listShapeOf struct {
	n      int   // elements
	every  int   // elements per segment
	starts []int // where elements 0, every, 2*every, ... start (just past their ',')
	end    int   // the position of the list's closing ']'
}

// listShape counts the elements of the list whose first is at from, by brackets
// outside strings, unchecked; ok is false where the text runs out.
func listShape(data []byte, from, every int) (shape listShapeOf, ok bool) {
	shape = listShapeOf{n: 1, every: every, starts: []int{from}}
	depth := 0
	for i := from; i < len(data); i++ {
		switch data[i] {
		case '"':
			if i = jsonkeys.StringEnd(data, i) - 1; i < 0 {
				return shape, false
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth < 0 {
				shape.end = i
				return shape, true
			}
		case ',':
			if depth == 0 {
				if shape.n%every == 0 {
					shape.starts = append(shape.starts, i+1)
				}
				shape.n++
			}
		}
	}
	return shape, false
}
