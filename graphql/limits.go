package graphql

import "fmt"

// Limits bound the work one document can cause. The first group is counted
// while parsing, which stops at the first one exceeded, so the parser never
// builds more than they allow; the second is counted after parsing and
// before validation, so that no quadratic validation work is done on an
// abusive document; the third bounds validation itself; the last, execution.
// All but depth and cost are counted for the whole document (all its
// operations and fragments), not per operation. A zero field means no limit.
type Limits struct {
	// MaxDocumentBytes is the length of the query text.
	MaxDocumentBytes int
	// MaxTokens is the number of lexical tokens (punctuators, names,
	// numbers, strings; not white space or comments).
	MaxTokens int
	// MaxOperations is the number of operation definitions.
	MaxOperations int
	// MaxDirectives is the number of directives written in the document.
	MaxDirectives int
	// MaxVariables is the number of variable definitions of all operations.
	MaxVariables int

	// MaxDepth is the deepest nesting of fields, counting the top-level
	// field as 1. Introspection's ofType chains do not count, so that the
	// standard introspection query fits.
	MaxDepth int
	// MaxFields is the number of field selections after fragment expansion,
	// summed over all operations.
	MaxFields int
	// MaxAliases is the number of aliased field selections after fragment
	// expansion, summed over all operations.
	MaxAliases int

	// MaxErrors is the number of validation errors reported before
	// validation stops with a last error saying so (graphql-js's maxErrors).
	MaxErrors int
	// MaxFieldComparisons bounds the work of checking that fields with the
	// same response name can be merged (OverlappingFieldsCanBeMerged): pairs
	// of fields compared, response names looked up in another selection set,
	// fragment pairs entered. A document needing more is refused.
	MaxFieldComparisons int

	// MaxCost bounds an operation's estimated cost (see cost.go), worked out
	// once its variables are known and before any resolver runs; 0: no bound.
	MaxCost int
	// MaxResponseBytes bounds the JSON an execution writes, data and errors;
	// past it the execution stops and answers one error; 0: no bound.
	MaxResponseBytes int
}

// DefaultLimits are the limits a new Schema starts with.
// The editor's introspection query has 135 tokens and 135 fields after
// expansion, one operation, no directive or variable; the README's examples
// are smaller, and a document at the 2,000-field limit has a few thousand
// tokens. A 20,000-token document parses and validates in a few
// milliseconds; 100,000 steps of field comparison take some tens.
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

// checkLimits measures the operations of doc: depth for each, fields and
// aliases for all together. Fragment cycles are not followed (validation
// reports them); counting stops at the first limit exceeded, so the work is
// bounded by the limits, not by the document.
func checkLimits(doc *Document, lim Limits) []*Error {
	c := &limitChecker{lim: lim, fragments: map[string]*FragmentDefinition{}, active: map[string]bool{}}
	for _, d := range doc.Definitions {
		if f, ok := d.(*FragmentDefinition); ok {
			if _, dup := c.fragments[f.Name]; !dup {
				c.fragments[f.Name] = f
			}
		}
	}
	for _, d := range doc.Definitions {
		op, ok := d.(*OperationDefinition)
		if !ok {
			continue
		}
		c.selectionSet(op.SelectionSet, 1, false)
		if c.err != nil {
			return []*Error{c.err}
		}
	}
	return nil
}

func (c *limitChecker) fail(pos Position, format string, args ...any) {
	if c.err == nil {
		c.err = newError(codeValidationFailed, fmt.Sprintf(format, args...), pos)
	}
}

func (c *limitChecker) selectionSet(set *SelectionSet, depth int, introspection bool) {
	for _, sel := range set.Selections {
		if c.err != nil {
			return
		}
		// Selections of every kind count as work, so that spreads which
		// expand to few fields cannot make the expansion itself expensive.
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
			if c.lim.MaxDepth > 0 && d > c.lim.MaxDepth {
				c.fail(s.Pos, "Query is nested too deeply: the maximum depth is %d.", c.lim.MaxDepth)
				return
			}
			c.fields++
			if c.lim.MaxFields > 0 && c.fields > c.lim.MaxFields {
				c.fail(s.Pos, "Query selects too many fields: at most %d field selections are allowed after fragment expansion.", c.lim.MaxFields)
				return
			}
			if s.Alias != "" {
				c.aliases++
				if c.lim.MaxAliases > 0 && c.aliases > c.lim.MaxAliases {
					c.fail(s.Pos, "Query uses too many aliases: at most %d are allowed.", c.lim.MaxAliases)
					return
				}
			}
			if s.SelectionSet != nil {
				c.selectionSet(s.SelectionSet, d+1, intro)
			}
		case *InlineFragment:
			c.selectionSet(s.SelectionSet, depth, introspection)
		case *FragmentSpread:
			f := c.fragments[s.Name]
			if f == nil || c.active[s.Name] {
				continue
			}
			c.active[s.Name] = true
			c.selectionSet(f.SelectionSet, depth, introspection)
			delete(c.active, s.Name)
		}
	}
}
