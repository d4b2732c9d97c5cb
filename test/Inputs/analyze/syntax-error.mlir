// Input of test/Tools/kopt-analyze/several-files.test: a syntax error on
// line 3.
func.func @broken( {
