// The CSV part of `cbt import` alone, for `ttl-bench fair`: the bench's CSV
// file read with Go's encoding/csv as `cbt import` reads it, each cell's
// `value@timestamp` split and the timestamp parsed
// (`timestamp=value-encoded`), nothing sent. Standard library only:
//
//	go build -o bench/target/go_csv bench/go_csv/main.go
//	bench/target/go_csv FILE   # prints {"rows": N, ...}
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

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go_csv FILE")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	check(err)
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	// The family row and the qualifier row name the columns.
	for i := 0; i < 2; i++ {
		_, err := r.Read()
		check(err)
	}
	rows, bytes := 0, 0
	var sum int64
	for {
		record, err := r.Read()
		if err == io.EOF {
			break
		}
		check(err)
		bytes += len(record[0])
		for _, field := range record[1:] {
			at := strings.LastIndexByte(field, '@')
			if at < 0 {
				check(fmt.Errorf("no timestamp: %s", field))
			}
			ts, err := strconv.ParseInt(field[at+1:], 10, 64)
			check(err)
			sum += ts
			bytes += len([]byte(field[:at]))
		}
		rows++
	}
	fmt.Printf("{\"rows\": %d, \"bytes\": %d, \"sum\": %d}\n", rows, bytes, sum)
}
