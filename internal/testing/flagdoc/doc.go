// Package flagdoc keeps the README's flag tables true: Table renders a command's flags as a Markdown
// table, and CheckREADME compares it with the table between a pair of markers in README.md (and, with
// FERRY_UPDATE_README=1, writes it there). Each binary's tests call CheckREADME with its command.
package flagdoc
