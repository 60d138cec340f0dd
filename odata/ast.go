package odata

import "time"

// Type is the type of an expression as computed by the type checker.
type Type int

// Expression types. Int covers Edm.Int32 and Edm.Int64 (carried as int64),
// Decimal is an int64 count of 1/decimalScale, Date is a calendar date
// carried as midnight UTC.
const (
	TypeInvalid Type = iota
	TypeNull
	TypeBool
	TypeInt
	TypeDecimal
	TypeDouble
	TypeString
	TypeDate
	TypeDateTimeOffset
	TypeEntity     // a single-valued navigation
	TypeCollection // a collection-valued navigation
)

var typeNames = [...]string{"invalid", "null", "Edm.Boolean", "Edm.Int64", "Edm.Decimal", "Edm.Double",
	"Edm.String", "Edm.Date", "Edm.DateTimeOffset", "entity", "collection"}

// String returns the type's name, for messages.
func (t Type) String() string {
	if t >= 0 && int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "invalid"
}

func (t Type) numeric() bool { return t == TypeInt || t == TypeDecimal || t == TypeDouble }

// Expr is a node of the expression tree. The parser builds it untyped; the
// type checker (Check) fills in Type and resolves names.
type Expr interface {
	// Pos is the byte offset of the node in the option value.
	Pos() int
	// Type is the checked type, TypeInvalid before checking.
	Type() Type
}

type exprBase struct {
	pos int
	typ Type
}

func (e *exprBase) Pos() int   { return e.pos }
func (e *exprBase) Type() Type { return e.typ }

func (e *exprBase) setTyp(t Type) { e.typ = t }

// Literal is a constant. Which value field is meaningful depends on Kind:
// Int (TypeInt, and TypeDecimal in units of 1/decimalScale), Float
// (TypeDouble), Str (TypeString), Bool (TypeBool), Time (TypeDate,
// TypeDateTimeOffset). TypeNull has no value.
type Literal struct {
	exprBase
	Kind  Type
	Int   int64
	Float float64
	Str   string
	Bool  bool
	Time  time.Time
}

// Segment is one step of a member path.
type Segment struct {
	Name string
	Pos  int
}

// Path is a member expression such as name, product/name, o/quantity or
// orders/$count. After checking, Var is the lambda variable the path starts
// from (-1 for the current entity), Navs the navigation properties followed,
// and Prop the final structural property (nil when the path ends in a
// navigation). Count is set for a trailing /$count.
type Path struct {
	exprBase
	Segments []Segment
	Var      int
	Navs     []*NavProperty
	Prop     *Property
	Count    bool
	// CountFilter is the condition of a trailing /$count($filter=...): only
	// the related entities it holds for are counted. nil counts them all.
	CountFilter Expr
}

// Lambda is source/any(v: body) or source/all(v: body). Body is nil for
// any(). Source is a path ending in a collection navigation; Depth is the
// index of the range variable in the evaluation scope.
type Lambda struct {
	exprBase
	Source *Path
	All    bool
	Var    string
	Body   Expr
	Depth  int
}

// Call is a built-in function call such as contains(name,'x').
type Call struct {
	exprBase
	Name string // lower-cased
	Args []Expr
	fn   *function
}

// Unary is "not x" or "-x".
type Unary struct {
	exprBase
	Op string // "not" or "-"
	X  Expr
}

// Binary is a binary operator: and, or, eq, ne, gt, ge, lt, le, has, add,
// sub, mul, div, divby, mod.
type Binary struct {
	exprBase
	Op   string // lower-cased operator keyword
	X, Y Expr
	num  Type // operand type after promotion, set by the checker
}

// In is "x in (a, b, ...)".
type In struct {
	exprBase
	X    Expr
	List []Expr
	num  Type
}
