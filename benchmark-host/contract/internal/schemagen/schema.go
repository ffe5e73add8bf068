package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// object is a JSON object that keeps its keys in the order they were set, so the schemas
// read in the order of the Go types.
type object struct {
	keys   []string
	values map[string]any
}

func newObject() *object { return &object{values: map[string]any{}} }

func (o *object) set(key string, v any) *object {
	if _, ok := o.values[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.values[key] = v
	return o
}

func (o *object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := marshal(o.values[k])
		if err != nil {
			return nil, err
		}
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// docs holds the contract's doc comments: "Type" and "Type.Field".
type docs map[string]string

func readDocs(dir string) (docs, error) {
	files, err := contractFiles(dir)
	if err != nil {
		return nil, err
	}
	out := docs{}
	for _, f := range files {
		for _, decl := range f.Decls {
			if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
				typeDocs(gd, out)
			}
		}
	}
	return out, nil
}

// typeDocs adds the doc comments of a type declaration's types and of their fields.
func typeDocs(gd *ast.GenDecl, out docs) {
	for _, spec := range gd.Specs {
		ts := spec.(*ast.TypeSpec)
		doc := ts.Doc
		if doc == nil && len(gd.Specs) == 1 {
			doc = gd.Doc
		}
		out[ts.Name.Name] = sentence(doc)
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			continue
		}
		for _, field := range st.Fields.List {
			text := sentence(field.Doc)
			if text == "" {
				text = sentence(field.Comment)
			}
			for _, name := range field.Names {
				out[ts.Name.Name+"."+name.Name] = text
			}
		}
	}
}

// contractFiles parses the package's Go files in dir, tests left out (parser.ParseDir, which
// read them all, is deprecated).
func contractFiles(dir string) ([]*ast.File, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

func sentence(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	return strings.Join(strings.Fields(g.Text()), " ")
}

type generator struct {
	docs docs
	used map[string]bool
}

const idBase = "https://github.com/perf-gate/perf-gate/benchmark-host/contract/schema/"

func (g *generator) message(m contract.Message) (*object, error) {
	t := reflect.TypeOf(m.Value)
	body, err := g.structSchema(t)
	if err != nil {
		return nil, err
	}
	s := newObject().
		set("$schema", "https://json-schema.org/draft/2020-12/schema").
		set("$id", idBase+m.Name+".schema.json").
		set("title", "perf-gate: "+m.Title)
	for _, k := range body.keys {
		s.set(k, body.values[k])
	}
	return s, nil
}

var (
	timeType    = reflect.TypeOf(time.Time{})
	rawJSONType = reflect.TypeOf(json.RawMessage{})
)

// typeSchema is the schema of a Go type, without a field's limit.
func (g *generator) typeSchema(t reflect.Type) (*object, error) {
	if t == timeType {
		return newObject().set("type", "string").set("format", "date-time"), nil
	}
	if t == rawJSONType {
		return newObject().set("type", "object"), nil // a JSON object read by protojson
	}
	switch t.Kind() {
	case reflect.Bool:
		return newObject().set("type", "boolean"), nil
	case reflect.String:
		return newObject().set("type", "string"), nil
	case reflect.Int, reflect.Int32, reflect.Int64:
		return newObject().set("type", "integer"), nil
	case reflect.Uint, reflect.Uint32, reflect.Uint64:
		return newObject().set("type", "integer").set("minimum", 0), nil
	case reflect.Float64:
		return newObject().set("type", "number"), nil
	case reflect.Pointer:
		return g.typeSchema(t.Elem())
	case reflect.Slice, reflect.Array:
		items, err := g.typeSchema(t.Elem())
		if err != nil {
			return nil, err
		}
		s := newObject().set("type", "array").set("items", items)
		if t.Kind() == reflect.Array {
			s.set("minItems", t.Len()).set("maxItems", t.Len())
		}
		return s, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("%s: map keys must be strings", t)
		}
		values, err := g.typeSchema(t.Elem())
		if err != nil {
			return nil, err
		}
		return newObject().set("type", "object").set("additionalProperties", values), nil
	case reflect.Struct:
		return g.structSchema(t)
	}
	return nil, fmt.Errorf("%s: no JSON Schema for kind %s", t, t.Kind())
}

// structSchema is an object with a property per JSON field; embedded structs are flattened,
// as encoding/json does. A field is required unless it is omitempty: what Go always writes,
// and what a reader must be sent.
func (g *generator) structSchema(t reflect.Type) (*object, error) {
	props := newObject()
	var required []string
	if err := g.addFields(t, props, &required); err != nil {
		return nil, err
	}
	s := newObject()
	if d := g.docs[t.Name()]; d != "" {
		s.set("description", d)
	}
	s.set("type", "object").set("additionalProperties", false).set("properties", props)
	if len(required) > 0 {
		s.set("required", required)
	}
	return s, nil
}

func (g *generator) addFields(t reflect.Type, props *object, required *[]string) error {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && name == "" {
			if err := g.addFields(f.Type, props, required); err != nil {
				return err
			}
			continue
		}
		if name == "" {
			return fmt.Errorf("%s.%s: no json name", t.Name(), f.Name)
		}
		s, err := g.fieldSchema(t, f)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", t.Name(), f.Name, err)
		}
		omitempty := strings.Contains(","+opts+",", ",omitempty,")
		if f.Type.Kind() == reflect.Pointer && !omitempty {
			s = newObject().set("anyOf", []any{s, newObject().set("type", "null")}) // written as null
		}
		props.set(name, s)
		if !omitempty {
			*required = append(*required, name)
		}
	}
	return nil
}

func (g *generator) fieldSchema(owner reflect.Type, f reflect.StructField) (*object, error) {
	s, err := g.typeSchema(f.Type)
	if err != nil {
		return nil, err
	}
	if d := g.docs[owner.Name()+"."+f.Name]; d != "" {
		// The field's own doc says more than its type's.
		s = withFirst(s, "description", d)
	}
	if tag := f.Tag.Get("limit"); tag != "" {
		limit, ok := contract.Limits[tag]
		if !ok {
			return nil, fmt.Errorf("limit %q is not in contract.Limits", tag)
		}
		g.used[tag] = true
		if err := applyLimit(s, f.Type, limit); err != nil {
			return nil, fmt.Errorf("limit %q: %w", tag, err)
		}
	}
	if def, ok := f.Tag.Lookup("default"); ok {
		v, err := parseDefault(f.Type, def)
		if err != nil {
			return nil, fmt.Errorf("default %q: %w", def, err)
		}
		s.set("default", v)
	}
	return s, nil
}

// withFirst returns s with key set first.
func withFirst(s *object, key string, v any) *object {
	out := newObject().set(key, v)
	for _, k := range s.keys {
		if k != key {
			out.set(k, s.values[k])
		}
	}
	return out
}

func applyLimit(s *object, t reflect.Type, limit any) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	kind := t.Kind()
	if r, ok := limit.(contract.Range); ok && kind == reflect.Map {
		// A map of numbers: the range bounds each value.
		return applyLimit(s.values["additionalProperties"].(*object), t.Elem(), r)
	}
	if r, ok := limit.(contract.Range); ok && (kind == reflect.Array || kind == reflect.Slice) {
		// A list of numbers (an interval): the range bounds each item.
		return applyLimit(s.values["items"].(*object), t.Elem(), r)
	}
	switch l := limit.(type) {
	case contract.Range:
		return applyRange(s, t, l)
	case contract.Pattern:
		if kind != reflect.String {
			return fmt.Errorf("a pattern on a %s", t)
		}
		s.set("pattern", l.Expr)
	case contract.Enum:
		return applyEnum(s, t, l)
	case contract.Items:
		if kind != reflect.Slice {
			return fmt.Errorf("an item count on a %s", t)
		}
		if l.Min > 0 {
			s.set("minItems", l.Min)
		}
		if l.Max > 0 {
			s.set("maxItems", l.Max)
		}
	case contract.Names:
		if kind != reflect.Slice || t.Elem().Kind() != reflect.String {
			return fmt.Errorf("names on a %s", t)
		}
		s.values["items"].(*object).set("pattern", l.Item.Expr)
		s.set("maxItems", l.Max)
	case contract.Const:
		s.set("const", l.Value)
	default:
		return fmt.Errorf("unknown kind of limit %T", limit)
	}
	return nil
}

// applyRange bounds a number (minimum, maximum, or their exclusive forms).
func applyRange(s *object, t reflect.Type, l contract.Range) error {
	if kind := t.Kind(); kind != reflect.Float64 && kind != reflect.Int && kind != reflect.Int64 {
		return fmt.Errorf("a range on a %s", t)
	}
	key := "minimum"
	if l.MinExclusive {
		key = "exclusiveMinimum"
	}
	s.set(key, l.Min)
	switch {
	case math.IsInf(l.Max, 1):
	case l.MaxExclusive:
		s.set("exclusiveMaximum", l.Max)
	default:
		s.set("maximum", l.Max)
	}
	return nil
}

// applyEnum closes a string, or the strings of a list, to the enum's values.
func applyEnum(s *object, t reflect.Type, l contract.Enum) error {
	switch {
	case t.Kind() == reflect.String:
		s.set("enum", []string(l))
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		s.values["items"].(*object).set("enum", []string(l))
	default:
		return fmt.Errorf("an enum on a %s", t)
	}
	return nil
}

func parseDefault(t reflect.Type, text string) (any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return text, nil
	case reflect.Int, reflect.Int64:
		return strconv.ParseInt(text, 10, 64)
	case reflect.Float64:
		return strconv.ParseFloat(text, 64)
	case reflect.Bool:
		return strconv.ParseBool(text)
	}
	return nil, fmt.Errorf("no default for a %s", t)
}
