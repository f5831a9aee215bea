package main

import (
	"context"
	"fmt"
	"io"
)

// command runs one subcommand with the arguments after its name and
// returns the exit code.
type command func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// commands is one level of subcommands ("countersign", "countersign
// audit", ...): the names it dispatches and the usage text that lists
// them. Every level answers alike: usage on stderr and exit 2 without a
// name or with an unknown one, usage on stdout and exit 0 for help.
type commands struct {
	prog  string // the words before the subcommand, for messages
	usage string
	table map[string]command
}

func (c commands) run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, c.usage)
		return 2
	}
	if run, ok := c.table[args[0]]; ok {
		return run(ctx, args[1:], stdout, stderr)
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, c.usage)
		return 0
	}
	fmt.Fprintf(stderr, "%s: unknown command %q\n\n%s", c.prog, args[0], c.usage)
	return 2
}
