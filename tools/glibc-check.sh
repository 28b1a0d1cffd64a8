#!/bin/sh
# Checks that a release binary asks the dynamic loader for no glibc symbol
# version above MAX (default 2.31) and for no library but libc's own
# (libc, libm, libdl, libpthread, the loader): prints the offenders, exit 1.
#
#   tools/glibc-check.sh [-m MAX] [-d OBJDUMP] BINARY
set -eu
max=2.31 objdump=objdump
while getopts m:d: opt; do
  case $opt in
    m) max=$OPTARG ;;
    d) objdump=$OPTARG ;;
    *) echo "usage: $0 [-m MAX] [-d OBJDUMP] BINARY" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# = 1 ] || { echo "usage: $0 [-m MAX] [-d OBJDUMP] BINARY" >&2; exit 2; }
bin=$1
status=0
newer=$("$objdump" -T "$bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/^GLIBC_//' | sort -u -V |
        awk -v max="$max" '{ split($0, a, "."); split(max, b, ".");
                             if (a[1] + 0 > b[1] + 0 || (a[1] == b[1] && a[2] + 0 > b[2] + 0)) print }')
if [ -n "$newer" ]; then
  echo "glibc-check: $bin needs glibc versions above $max:" >&2
  for v in $newer; do "$objdump" -T "$bin" | grep "GLIBC_$v " >&2; done
  status=1
fi
libs=$("$objdump" -p "$bin" | sed -n 's/^ *NEEDED *//p' |
       grep -v -E '^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|ld-linux.*\.so\.[0-9]+)$' || true)
if [ -n "$libs" ]; then
  echo "glibc-check: $bin needs libraries beyond libc: $(echo $libs)" >&2
  status=1
fi
[ $status = 0 ] && echo "glibc-check: $bin: glibc <= $max, libc only ($("$objdump" -T "$bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -u -V | tail -n 1))"
exit $status
