#!/bin/bash
# shard/lib.sh - what shard/setup.sh and shard/view.sh share: reading a
# libpq connection string into the options of a postgres_fdw server and its
# user mapping, and psql against a connection string.
#
# Connection strings are libpq's keyword=value form, pairs separated by
# spaces, values without spaces or quotes:
#   "host=/tmp/sock port=5433 dbname=tpch user=postgres"
# user and password go to the user mapping, every other keyword to the
# server (host, hostaddr, port, dbname, sslmode...).  A URI is not read.

# shard_q CONNINFO ARGS...: psql without psqlrc, quiet, unaligned, stopping
# at the first error
shard_q() {
  local conn=$1; shift
  PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning" psql -X -q -At -v ON_ERROR_STOP=1 -d "$conn" "$@"
}

# shard_conn_value CONNINFO KEY: the value of KEY in CONNINFO (empty when
# absent)
shard_conn_value() {
  local kv
  for kv in $1; do
    case $kv in "$2="*) echo "${kv#*=}"; return 0 ;; esac
  done
  return 0
}

# shard_conn_with CONNINFO KEY VALUE: CONNINFO with KEY set to VALUE
shard_conn_with() {
  local kv out=""
  for kv in $1; do
    case $kv in "$2="*) ;; *) out="$out $kv" ;; esac
  done
  echo "${out# } $2=$3"
}

# shard_sql_literal TEXT: TEXT as an SQL string literal
shard_sql_literal() {
  printf "'%s'" "${1//\'/\'\'}"
}

# shard_fdw_options CONNINFO server|mapping: the OPTIONS list, without its
# parentheses, for CREATE SERVER (every keyword but user and password) or
# CREATE USER MAPPING (user and password)
shard_fdw_options() {
  local kv key out=""
  for kv in $1; do
    case $kv in *=*) ;; *) echo "not keyword=value in a connection string: $kv" >&2; return 1 ;; esac
    key=${kv%%=*}
    case $2:$key in
      server:user|server:password) continue ;;
      mapping:user|mapping:password) ;;
      mapping:*) continue ;;
    esac
    out="$out, $key $(shard_sql_literal "${kv#*=}")"
  done
  echo "${out#, }"
}
