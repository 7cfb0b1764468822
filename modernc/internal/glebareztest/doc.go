// Package glebareztest checks the README's path for programs on GORM's
// pure-Go dialector github.com/glebarez/sqlite: with the go.mod line that
// replaces the fork github.com/glebarez/go-sqlite by cleolease's stand-in
// (modernc/glebarez), the program links the dialector beside
// cleolease-modernc and runs GORM through cleolease. It is a module of its
// own so that its replace lines and GORM stay out of the modernc module.
package glebareztest
