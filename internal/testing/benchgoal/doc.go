// Package benchgoal prints a benchmark's figure beside the goal Ferry holds it to — Report — so that
// `make bench` says, figure by figure, whether a goal is met, not only the figures.
package benchgoal
