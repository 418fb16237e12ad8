// The CSV part of `cbt import` alone: the bench's CSV file read with Go's
// encoding/csv, as `cbt import` reads it, each cell's `value@timestamp`
// split and the timestamp parsed (`timestamp=value-encoded`), nothing
// sent. `ttl-bench fair` runs it beside `cbt import` to show what the CSV
// costs Go. Standard library only, so it builds offline:
//
//	go build -o bench/target/go_csv bench/go_csv/main.go
//	bench/target/go_csv FILE   # prints {"rows": N}
package main

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go_csv FILE")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	// The family row and the qualifier row name the columns.
	for i := 0; i < 2; i++ {
		if _, err := r.Read(); err != nil {
			fmt.Fprintln(os.Stderr, "header:", err)
			os.Exit(1)
		}
	}
	rows, bytes := 0, 0
	var sum int64
	for {
		record, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		bytes += len(record[0])
		for _, field := range record[1:] {
			at := strings.LastIndexByte(field, '@')
			if at < 0 {
				fmt.Fprintln(os.Stderr, "no timestamp:", field)
				os.Exit(1)
			}
			ts, err := strconv.ParseInt(field[at+1:], 10, 64)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			sum += ts
			bytes += len([]byte(field[:at]))
		}
		rows++
	}
	fmt.Printf("{\"rows\": %d, \"bytes\": %d, \"sum\": %d}\n", rows, bytes, sum)
}
