# SPDX-License-Identifier: BSD-2-Clause
# tests/http/lib.sh - what the HTTP tests share, after tests/lib.sh: a daemon
# with HTTP listeners, curl with the answer's status kept, and the record of
# answers the OpenAPI check reads.

# What they run on (scripts/deps.sh installs it): skipped, saying so, without.
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
python3 -c 'import jsonschema' 2>/dev/null ||
	{ echo "SKIP: no python3-jsonschema (the OpenAPI check)"; exit 77; }

HTTP_SEEN=${HTTP_SEEN:-$T/seen.jsonl}
export HTTP_SEEN
HTTP_PY=$top_srcdir/tests/http

# start_http NAME [ARGS...]: start_semd NAME with an HTTP listener on
# 127.0.0.1 (port 0) and one on $T/NAME.http.sock; sets NAME_HTTP
# (http:HOST:PORT), NAME_HTTPU (http+unix:PATH) and NAME_URL.
start_http() {
	sh_name=$1; shift
	start_semd "$sh_name" --listen http:127.0.0.1:0 \
		--listen "http+unix:$T/$sh_name.http.sock" "$@" || return 1
	eval "${sh_name}_HTTP=\$(grep -m1 '^http:' \"\$T/\$sh_name.ready\")"
	eval "${sh_name}_HTTPU=\$(grep -m1 '^http+unix:' \"\$T/\$sh_name.ready\")"
	eval "${sh_name}_URL=http://\${${sh_name}_HTTP#http:}"
}

# hcurl OUT [CURL-ARGS...]: curl, the body into OUT, the status into OUT.st;
# the answer is recorded for the OpenAPI check (METHOD and path from the
# arguments).
hcurl() {
	hc_out=$1; shift
	curl -sS -o "$hc_out" -w '%{http_code} %{content_type}\n' "$@" >"$hc_out.st" 2>"$hc_out.err" ||
		echo "000 -" >"$hc_out.st"
	python3 - "$hc_out" "$@" <<'PY'
import json, os, sys, urllib.parse
out, args = sys.argv[1], sys.argv[2:]
method, url = "GET", None
i = 0
while i < len(args):
    if args[i] == "-X":
        method = args[i + 1]; i += 1
    elif args[i] in ("-d", "--data") and method == "GET":
        method = "POST"; i += 1
    elif args[i] in ("-H", "-d", "--data", "--unix-socket", "-w", "-o"):
        i += 1
    elif args[i].startswith("http"):
        url = args[i]
    i += 1
st, ctype = open(out + ".st").read().split(" ", 1)
body = None
if "json" in ctype:
    try:
        body = json.load(open(out))
    except ValueError:
        pass
if url and os.environ.get("HTTP_SEEN"):
    with open(os.environ["HTTP_SEEN"], "a") as f:
        f.write(json.dumps({"method": method, "path": urllib.parse.urlsplit(url).path,
                            "status": int(st), "type": ctype.strip(), "body": body}) + "\n")
PY
}

# st OUT: the status of the last hcurl into OUT.
st() { cut -d' ' -f1 "$1.st"; }

# jget OUT KEY: a member of the JSON body in OUT (a.b for nested, [0] too).
jget() {
	python3 -c 'import json,sys
v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v[int(k)] if k.isdigit() else v[k]
print(v if not isinstance(v, (dict, list)) else json.dumps(v))' "$1" "$2" 2>/dev/null
}
