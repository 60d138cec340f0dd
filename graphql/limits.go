package graphql

import "fmt"

// Limits bound the work one document can cause: the first group while parsing,
// the second before validation (so that an abusive document gets no quadratic
// validation work), the third validation, the last execution. All but depth and
// cost count the whole document. A zero field means no limit.
type Limits struct {
	MaxDocumentBytes int // length of the query text
	MaxTokens        int // lexical tokens: punctuators, names, numbers, strings
	MaxOperations    int // operation definitions
	MaxDirectives    int // directives written in the document
	MaxVariables     int // variable definitions of all operations

	// MaxDepth is the deepest nesting of fields, the top-level field 1;
	// introspection's ofType chains do not count.
	MaxDepth   int
	MaxFields  int // field selections after fragment expansion, all operations
	MaxAliases int // aliased field selections after fragment expansion

	MaxErrors           int // validation errors reported before a last one saying so
	MaxFieldComparisons int // steps of OverlappingFieldsCanBeMerged

	MaxCost          int // an operation's estimated cost (cost.go)
	MaxResponseBytes int // the JSON an execution writes, past which it stops
}

// DefaultLimits are a new Schema's. The editor's introspection query has 135
// tokens and fields; 20,000 tokens parse and validate in a few milliseconds.
var DefaultLimits = Limits{
	MaxDocumentBytes: 1 << 20,
	MaxTokens:        20000,
	MaxOperations:    20,
	MaxDirectives:    200,
	MaxVariables:     100,

	MaxDepth:   12,
	MaxFields:  2000,
	MaxAliases: 100,

	MaxErrors:           100,
	MaxFieldComparisons: 100000,

	MaxCost:          50000,
	MaxResponseBytes: 16 << 20,
}

type limitChecker struct {
	lim       Limits
	fragments map[string]*FragmentDefinition
	active    map[string]bool // fragments being expanded, to stop at cycles
	fields    int
	aliases   int
	work      int
	err       *Error
}

// checkLimits measures doc's operations, stopping at the first limit exceeded,
// so that the work is bounded by the limits; cycles are left to validation.
func checkLimits(doc *Document, fragments map[string]*FragmentDefinition, lim Limits) []*Error {
	c := &limitChecker{lim: lim, fragments: fragments, active: map[string]bool{}}
	for _, d := range doc.Definitions {
		if op, ok := d.(*OperationDefinition); ok {
			if c.selectionSet(op.SelectionSet, 1, false); c.err != nil {
				return []*Error{c.err}
			}
		}
	}
	return nil
}

// fail records the limit exceeded; selectionSet stops at once.
func (c *limitChecker) fail(pos Position, format string, args ...any) {
	c.err = newError(codeValidationFailed, fmt.Sprintf(format, args...), pos)
}

func (c *limitChecker) selectionSet(set *SelectionSet, depth int, introspection bool) {
	for _, sel := range set.Selections {
		if c.err != nil {
			return
		}
		// Every selection is work, so that spreads expanding to few fields
		// cannot make the expansion itself expensive.
		c.work++
		if c.lim.MaxFields > 0 && c.work > 10*c.lim.MaxFields {
			c.fail(sel.Position(), "Query is too large: at most %d selections are allowed after fragment expansion.", 10*c.lim.MaxFields)
			return
		}
		switch s := sel.(type) {
		case *Field:
			d := depth
			intro := introspection || s.Name == "__schema" || s.Name == "__type"
			if intro && s.Name == "ofType" {
				d--
			}
			c.fields++
			if s.Alias != "" {
				c.aliases++
			}
			switch {
			case c.lim.MaxDepth > 0 && d > c.lim.MaxDepth:
				c.fail(s.Pos, "Query is nested too deeply: the maximum depth is %d.", c.lim.MaxDepth)
			case c.lim.MaxFields > 0 && c.fields > c.lim.MaxFields:
				c.fail(s.Pos, "Query selects too many fields: at most %d field selections are allowed after fragment expansion.", c.lim.MaxFields)
			case s.Alias != "" && c.lim.MaxAliases > 0 && c.aliases > c.lim.MaxAliases:
				c.fail(s.Pos, "Query uses too many aliases: at most %d are allowed.", c.lim.MaxAliases)
			case s.SelectionSet != nil:
				c.selectionSet(s.SelectionSet, d+1, intro)
			}
		case *InlineFragment:
			c.selectionSet(s.SelectionSet, depth, introspection)
		case *FragmentSpread:
			if f := c.fragments[s.Name]; f != nil && !c.active[s.Name] {
				c.active[s.Name] = true
				c.selectionSet(f.SelectionSet, depth, introspection)
				delete(c.active, s.Name)
			}
		}
	}
}
