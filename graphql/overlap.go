package graphql

import (
	"fmt"
	"iter"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// OverlappingFieldsCanBeMerged (spec 5.3.2), by graphql-js's algorithm. A
// hostile document can still ask for millions of comparisons, so the work is
// metered (Limits.MaxFieldComparisons) and the rule stops once its conflicts
// would fill the error list (Limits.MaxErrors), with an error that says so.
// Fields written alike form a class (see shape), one pair deciding for two
// classes, so that one field repeated in many fragments passes the meter.

type fieldAndType struct {
	parent *Type
	node   *Field
	typ    *Type // nil when the field is unknown
}

// fieldMap holds the fields of a selection set by response name, in order
// of first appearance, and the names of the fragments it spreads.
type fieldMap struct {
	keys      []string
	fields    map[string][]fieldAndType
	classes   map[string][][]int // see overlapChecker.classes
	fragments []string
}

type conflict struct {
	key     string
	reason  string
	fields1 []*Field
	fields2 []*Field
}

// comparison names two fragments compared, or a field map (which stops
// recursion through self-referencing fragments) and a fragment.
type comparison struct {
	fields *fieldMap
	a, b   string
}

type overlapChecker struct {
	c        *vctx
	cache    map[*SelectionSet]*fieldMap
	compared map[comparison]bool // value: whether compared as mutually exclusive
	// canonical holds each argument value printed once, since a field may
	// be compared with many others.
	canonical map[*Value]string
	// shapes numbers the fields by how they are written (see shape).
	shapes  map[*Field]int
	shapeOf map[string]int

	steps     int // work done so far, against Limits.MaxFieldComparisons
	conflicts int // conflicts found so far, at any depth
	stopped   bool
}

func overlappingFieldsCanBeMergedRule(c *vctx, on *hooks) {
	o := &overlapChecker{c: c, cache: map[*SelectionSet]*fieldMap{}, compared: map[comparison]bool{},
		canonical: map[*Value]string{},
		shapes:    map[*Field]int{}, shapeOf: map[string]int{}}
	on.selectionSet = append(on.selectionSet, func(set *SelectionSet, parent *Type) {
		if o.stopped {
			return
		}
		conflicts := o.withinSelectionSet(parent, set)
		if o.stopped {
			// What was found is reported, then the abort: the document is
			// refused either way, and the client learns why the list ends.
			defer o.stop()
		}
		for _, cf := range conflicts {
			locs := append(fieldPositions(cf.fields1), fieldPositions(cf.fields2)...)
			c.report(fmt.Sprintf("Fields %q conflict because %s. Use different aliases on the fields to fetch both if this was intentional.", cf.key, cf.reason), locs...)
		}
	})
}

// step charges one unit of work and reports whether the rule may go on.
func (o *overlapChecker) step() bool {
	o.steps++
	if o.steps%4096 == 0 {
		runtime.Gosched() // as the lexer does: a long check lets other requests in
	}
	if max := o.c.schema.Limits.MaxFieldComparisons; max > 0 && o.steps > max {
		o.stopped = true
	}
	return !o.stopped
}

// found counts a conflict and reports whether the rule may go on: past the
// error limit, more conflicts would not be reported anyway.
func (o *overlapChecker) found() bool {
	o.conflicts++
	if max := o.c.schema.Limits.MaxErrors; max > 0 && o.conflicts > max {
		o.stopped = true
	}
	return !o.stopped
}

// stop ends validation with the reason the rule stopped.
func (o *overlapChecker) stop() {
	if max := o.c.schema.Limits.MaxFieldComparisons; max > 0 && o.steps > max {
		o.c.abort(fmt.Sprintf("Query is too complex to validate: checking that its fields can be merged takes more than %d comparisons.", max))
		return
	}
	o.c.abort(tooManyErrors)
}

// firstComparison reports whether k is yet to be compared as exclusive (or
// not), and records that it now is.
func (o *overlapChecker) firstComparison(k comparison, exclusive bool) bool {
	if k.a > k.b {
		k.a, k.b = k.b, k.a
	}
	// Comparing as not exclusive covers comparing as exclusive.
	if was, ok := o.compared[k]; ok && (exclusive || !was) {
		return false
	}
	o.compared[k] = exclusive
	return true
}

func (o *overlapChecker) withinSelectionSet(parent *Type, set *SelectionSet) []conflict {
	var out []conflict
	ff := o.fieldsAndFragmentNames(parent, set)
	o.collectWithin(&out, ff)
	for i, name := range ff.fragments {
		o.betweenFieldsAndFragment(&out, false, ff, name)
		for _, other := range ff.fragments[i+1:] {
			o.betweenFragments(&out, false, name, other)
		}
	}
	return out
}

func (o *overlapChecker) betweenFieldsAndFragment(out *[]conflict, exclusive bool, fm *fieldMap, fragName string) {
	if !o.step() || !o.firstComparison(comparison{fields: fm, a: fragName}, exclusive) {
		return
	}
	f := o.c.fragments[fragName]
	if f == nil {
		return
	}
	ff2 := o.referencedFieldsAndFragmentNames(f)
	if fm == ff2 {
		return
	}
	o.collectBetween(out, exclusive, fm, ff2)
	for _, ref := range ff2.fragments {
		o.betweenFieldsAndFragment(out, exclusive, fm, ref)
	}
}

func (o *overlapChecker) betweenFragments(out *[]conflict, exclusive bool, name1, name2 string) {
	if !o.step() || name1 == name2 || !o.firstComparison(comparison{a: name1, b: name2}, exclusive) {
		return
	}
	f1, f2 := o.c.fragments[name1], o.c.fragments[name2]
	if f1 == nil || f2 == nil {
		return
	}
	ff1 := o.referencedFieldsAndFragmentNames(f1)
	ff2 := o.referencedFieldsAndFragmentNames(f2)
	o.collectBetween(out, exclusive, ff1, ff2)
	for _, ref := range ff2.fragments {
		o.betweenFragments(out, exclusive, name1, ref)
	}
	for _, ref := range ff1.fragments {
		o.betweenFragments(out, exclusive, ref, name2)
	}
}

func (o *overlapChecker) betweenSubSelectionSets(exclusive bool, p1 *Type, s1 *SelectionSet, p2 *Type, s2 *SelectionSet) []conflict {
	var out []conflict
	ff1 := o.fieldsAndFragmentNames(p1, s1)
	ff2 := o.fieldsAndFragmentNames(p2, s2)
	o.collectBetween(&out, exclusive, ff1, ff2)
	for _, n2 := range ff2.fragments {
		o.betweenFieldsAndFragment(&out, exclusive, ff1, n2)
	}
	for _, n1 := range ff1.fragments {
		o.betweenFieldsAndFragment(&out, exclusive, ff2, n1)
	}
	for _, n1 := range ff1.fragments {
		for _, n2 := range ff2.fragments {
			o.betweenFragments(&out, exclusive, n1, n2)
		}
	}
	return out
}

// collectWithin compares the fields of fm that share a response name: each
// class (see classes) with itself and with each later class.
func (o *overlapChecker) collectWithin(out *[]conflict, fm *fieldMap) {
	for _, k := range fm.keys {
		fs := fm.fields[k]
		if len(fs) < 2 {
			continue
		}
		cs := o.classes(fm, k)
		for a, c := range cs {
			if !o.comparePairs(out, false, k, fs, fs, pairs(c, nil, true)) {
				return
			}
			for _, later := range cs[a+1:] {
				if !o.comparePairs(out, false, k, fs, fs, pairs(c, later, true)) {
					return
				}
			}
		}
	}
}

func (o *overlapChecker) collectBetween(out *[]conflict, exclusive bool, fm1, fm2 *fieldMap) {
	for _, k := range fm1.keys {
		if !o.step() {
			return
		}
		fs2, ok := fm2.fields[k]
		if !ok {
			continue
		}
		fs1 := fm1.fields[k]
		for _, c1 := range o.classes(fm1, k) {
			for _, c2 := range o.classes(fm2, k) {
				if !o.comparePairs(out, exclusive, k, fs1, fs2, pairs(c1, c2, false)) {
					return
				}
			}
		}
	}
}

// comparePairs compares fs1[i] with fs2[j] for each pair (i, j) of two
// classes, and reports whether the rule may go on. The fields of a class are
// written alike, so the first pair decides for all; only when it conflicts
// are the others compared, to report each one as graphql-js does.
func (o *overlapChecker) comparePairs(out *[]conflict, exclusive bool, key string, fs1, fs2 []fieldAndType, pairs iter.Seq2[int, int]) bool {
	first := true
	for i, j := range pairs {
		n := len(*out)
		if !o.compare(out, exclusive, key, fs1[i], fs2[j]) {
			return false
		}
		if first && len(*out) == n {
			return true
		}
		first = false
	}
	return true
}

// pairs yields the pairs of a member of class c1 and one of c2, or with c2 nil,
// of two members of c1. ordered, for classes of one list, puts the earlier
// field first, as graphql-js compares them (the order of an error's locations).
func pairs(c1, c2 []int, ordered bool) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		for x, i := range c1 {
			others := c2
			if c2 == nil {
				others = c1[x+1:]
			}
			for _, j := range others {
				a, b := i, j
				if ordered && a > b {
					a, b = b, a
				}
				if !yield(a, b) {
					return
				}
			}
		}
	}
}

// oneClass is the classes of a single field.
var oneClass = [][]int{{0}}

// classes groups the fields of fm under key by parent type and shape, in
// order of first appearance; each class lists indices into fm.fields[key].
func (o *overlapChecker) classes(fm *fieldMap, key string) [][]int {
	fs := fm.fields[key]
	if len(fs) == 1 {
		return oneClass
	}
	if cs, ok := fm.classes[key]; ok {
		return cs
	}
	type classKey struct {
		parent *Type
		shape  int
	}
	index := map[classKey]int{}
	var cs [][]int
	for i, f := range fs {
		k := classKey{f.parent, o.shape(f.node)}
		c, ok := index[k]
		if !ok {
			c = len(cs)
			index[k] = c
			cs = append(cs, nil)
		}
		cs[c] = append(cs[c], i)
	}
	if fm.classes == nil {
		fm.classes = map[string][][]int{}
	}
	fm.classes[key] = cs
	return cs
}

// shape returns a number shared by exactly the fields written alike (alias,
// name, arguments in order and selections' shapes; directives do not matter
// to merging). Each field is numbered once, from its children's numbers.
func (o *overlapChecker) shape(f *Field) int {
	if n, ok := o.shapes[f]; ok {
		return n
	}
	o.step()
	var b strings.Builder
	b.WriteString(f.Alias)
	b.WriteByte(':')
	b.WriteString(f.Name)
	for _, a := range f.Arguments {
		b.WriteByte(' ')
		b.WriteString(a.Name)
		b.WriteByte('=')
		b.WriteString(o.canonicalValue(a.Value))
	}
	if f.SelectionSet != nil {
		o.writeShape(&b, f.SelectionSet)
	}
	n, ok := o.shapeOf[b.String()]
	if !ok {
		n = len(o.shapeOf)
		o.shapeOf[b.String()] = n
	}
	o.shapes[f] = n
	return n
}

func (o *overlapChecker) writeShape(b *strings.Builder, set *SelectionSet) {
	b.WriteByte('{')
	for _, sel := range set.Selections {
		switch s := sel.(type) {
		case *Field:
			b.WriteString(strconv.Itoa(o.shape(s)))
		case *FragmentSpread:
			b.WriteString("...")
			b.WriteString(s.Name)
		case *InlineFragment:
			b.WriteString("...")
			if s.TypeCondition != nil {
				b.WriteString(s.TypeCondition.Name)
			}
			o.writeShape(b, s.SelectionSet)
		}
		b.WriteByte(' ')
	}
	b.WriteByte('}')
}

// compare adds the conflict between f1 and f2, if any, to out, and reports
// whether the rule may go on.
func (o *overlapChecker) compare(out *[]conflict, exclusive bool, key string, f1, f2 fieldAndType) bool {
	if !o.step() {
		return false
	}
	if cf := o.findConflict(exclusive, key, f1, f2); cf != nil {
		*out = append(*out, *cf)
		return o.found()
	}
	return !o.stopped
}

func (o *overlapChecker) findConflict(parentExclusive bool, key string, f1, f2 fieldAndType) *conflict {
	exclusive := parentExclusive || (f1.parent != f2.parent && f1.parent != nil && f2.parent != nil &&
		f1.parent.Kind == Object && f2.parent.Kind == Object)
	because := func(reason string) *conflict {
		return &conflict{key: key, reason: reason, fields1: []*Field{f1.node}, fields2: []*Field{f2.node}}
	}
	if !exclusive && f1.node.Name != f2.node.Name {
		return because(fmt.Sprintf("%q and %q are different fields", f1.node.Name, f2.node.Name))
	}
	if !exclusive && !o.sameArguments(f1.node.Arguments, f2.node.Arguments) {
		return because("they have differing arguments")
	}
	if !o.sameStreams(f1.node.Directives, f2.node.Directives) {
		return because("they have differing stream directives")
	}
	t1, t2 := f1.typ, f2.typ
	if t1 != nil && t2 != nil && doTypesConflict(t1, t2) {
		return because(fmt.Sprintf("they return conflicting types %q and %q", t1, t2))
	}
	s1, s2 := f1.node.SelectionSet, f2.node.SelectionSet
	if s1 == nil || s2 == nil {
		return nil
	}
	subs := o.betweenSubSelectionSets(exclusive, t1.Named(), s1, t2.Named(), s2)
	if len(subs) == 0 {
		return nil
	}
	cf := because("")
	var reasons []string
	for _, s := range subs {
		reasons = append(reasons, fmt.Sprintf("subfields %q conflict because %s", s.key, s.reason))
		cf.fields1 = append(cf.fields1, s.fields1...)
		cf.fields2 = append(cf.fields2, s.fields2...)
	}
	cf.reason = strings.Join(reasons, " and ")
	return cf
}

func doTypesConflict(t1, t2 *Type) bool {
	if t1.OfType != nil || t2.OfType != nil {
		return t1.Kind != t2.Kind || doTypesConflict(t1.OfType, t2.OfType)
	}
	return (t1.isLeaf() || t2.isLeaf()) && t1 != t2
}

// sameStreams reports whether both or neither of ds1 and ds2 hold @stream, with
// the same arguments: a list is streamed one way or not at all.
func (o *overlapChecker) sameStreams(ds1, ds2 []*Directive) bool {
	find := func(ds []*Directive) *Directive {
		if i := slices.IndexFunc(ds, func(d *Directive) bool { return d.Name == "stream" }); i >= 0 {
			return ds[i]
		}
		return nil
	}
	s1, s2 := find(ds1), find(ds2)
	if s1 == nil || s2 == nil {
		return s1 == s2
	}
	return o.sameArguments(s1.Arguments, s2.Arguments)
}

// sameArguments reports whether each argument of a1 has the same value as the
// first argument of a2 with its name, and both have as many.
func (o *overlapChecker) sameArguments(a1, a2 []*Argument) bool {
	if len(a1) != len(a2) {
		return false
	}
	find := func(name string) *Argument {
		for _, z := range a2 {
			if z.Name == name {
				return z
			}
		}
		return nil
	}
	if len(a2) > 8 {
		// Looking each name up in turn would be quadratic: a hostile field
		// can have thousands of arguments.
		byName := make(map[string]*Argument, len(a2))
		for _, z := range a2 {
			if _, dup := byName[z.Name]; !dup {
				byName[z.Name] = z
			}
		}
		find = func(name string) *Argument { return byName[name] }
	}
	for _, x := range a1 {
		y := find(x.Name)
		if y == nil || o.canonicalValue(x.Value) != o.canonicalValue(y.Value) {
			return false
		}
	}
	return true
}

// canonicalValue prints a value once, with object fields sorted, so that
// equal values print equally.
func (o *overlapChecker) canonicalValue(v *Value) string {
	s, ok := o.canonical[v]
	if !ok {
		s = printValue(v, true)
		o.canonical[v] = s
	}
	return s
}

func (o *overlapChecker) fieldsAndFragmentNames(parent *Type, set *SelectionSet) *fieldMap {
	if ff, ok := o.cache[set]; ok {
		return ff
	}
	fm := &fieldMap{fields: map[string][]fieldAndType{}}
	o.collectFieldsAndFragmentNames(parent, set, fm, map[string]bool{})
	o.cache[set] = fm
	return fm
}

func (o *overlapChecker) referencedFieldsAndFragmentNames(f *FragmentDefinition) *fieldMap {
	return o.fieldsAndFragmentNames(o.c.typeFromRef(f.TypeCondition), f.SelectionSet)
}

func (o *overlapChecker) collectFieldsAndFragmentNames(parent *Type, set *SelectionSet, fm *fieldMap, seen map[string]bool) {
	for _, sel := range set.Selections {
		switch s := sel.(type) {
		case *Field:
			var typ *Type
			if parent != nil && (parent.Kind == Object || parent.Kind == Interface) && parent.fieldMap[s.Name] != nil {
				typ = parent.fieldMap[s.Name].Type
			}
			k := s.responseKey()
			if _, ok := fm.fields[k]; !ok {
				fm.keys = append(fm.keys, k)
			}
			fm.fields[k] = append(fm.fields[k], fieldAndType{parent: parent, node: s, typ: typ})
		case *FragmentSpread:
			if !seen[s.Name] {
				seen[s.Name] = true
				fm.fragments = append(fm.fragments, s.Name)
			}
		case *InlineFragment:
			t := parent
			if s.TypeCondition != nil {
				t = o.c.typeFromRef(s.TypeCondition)
			}
			o.collectFieldsAndFragmentNames(t, s.SelectionSet, fm, seen)
		}
	}
}
