// Package readme keeps the README's Layout table complete: its test walks the checkout for every
// directory holding Go code and fails when one is not named in the table.
package readme
