/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli/out.c - semctl's output: strings from the server escaped
 * for a terminal or JSON, times, durations and rates for people.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "cli/semctl.h"

/* Decode one UTF-8 sequence at p: its length (1-4) and *cp, or 0 when it
 * is not well-formed (overlong forms, surrogates and truncations included). */
static int utf8_decode(const unsigned char *p, uint32_t *cp)
{
	unsigned char c0 = p[0];
	int len, i;

	if (c0 < 0x80) {
		*cp = c0;
		return 1;
	}
	if (c0 >= 0xc2 && c0 <= 0xdf) {
		len = 2;
		*cp = c0 & 0x1f;
	} else if (c0 >= 0xe0 && c0 <= 0xef) {
		len = 3;
		*cp = c0 & 0x0f;
	} else if (c0 >= 0xf0 && c0 <= 0xf4) {
		len = 4;
		*cp = c0 & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && *cp < 0x800) || (len == 4 && (*cp < 0x10000 || *cp > 0x10ffff)) ||
	    (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return len;
}

/* Whether a code point must not reach a terminal as it is: C0, DEL, C1,
 * and the invisible ones that reorder or hide text (bidi embeddings,
 * overrides and isolates, zero-width characters, line and paragraph
 * separators, the byte-order mark, the Arabic letter mark). */
static bool cp_unsafe(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c ||
	       (cp >= 0x200b && cp <= 0x200f) || cp == 0x2028 || cp == 0x2029 ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
}

/* s escaped for a terminal: \\, \n, \t, \r, \xHH for other control bytes
 * and invalid UTF-8, \uXXXX for the unsafe code points above. The result
 * lives until eight more calls. */
const char *esc(const char *s)
{
	static char *ring[8];
	static unsigned next;
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t cap = strlen((const char *)p) * 6 + 1, n = 0;
	char *out = malloc(cap);
	uint32_t cp;
	int len;

	if (out == NULL)
		return "(out of memory)";
	while (*p) {
		len = utf8_decode(p, &cp);
		if (len == 0) {
			n += (size_t)snprintf(out + n, cap - n, "\\x%02x", *p);
			p++;
		} else if (cp == '\\') {
			n += (size_t)snprintf(out + n, cap - n, "\\\\");
			p++;
		} else if (cp == '\n' || cp == '\t' || cp == '\r') {
			n += (size_t)snprintf(out + n, cap - n, "\\%c",
					      cp == '\n' ? 'n' : cp == '\t' ? 't' : 'r');
			p++;
		} else if (cp < 0x80 && cp_unsafe(cp)) {
			n += (size_t)snprintf(out + n, cap - n, "\\x%02x", (unsigned)cp);
			p++;
		} else if (cp_unsafe(cp)) {
			n += (size_t)snprintf(out + n, cap - n, "\\u%04x", (unsigned)cp);
			p += len;
		} else {
			memcpy(out + n, p, (size_t)len);
			n += (size_t)len;
			p += len;
		}
	}
	out[n] = '\0';
	free(ring[next % 8]);
	ring[next++ % 8] = out;
	return out;
}

/* Write s as a JSON string: escaped, the unsafe code points as \uXXXX,
 * invalid UTF-8 as U+FFFD. */
void json_str(const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	uint32_t cp;
	int len;

	putchar('"');
	while (*p) {
		len = utf8_decode(p, &cp);
		if (len == 0) {
			fputs("\\ufffd", stdout);
			p++;
			continue;
		}
		if (cp == '"' || cp == '\\')
			printf("\\%c", (char)cp);
		else if (cp == '\n')
			fputs("\\n", stdout);
		else if (cp == '\t')
			fputs("\\t", stdout);
		else if (cp == '\r')
			fputs("\\r", stdout);
		else if (cp_unsafe(cp))
			printf("\\u%04x", (unsigned)cp);
		else
			fwrite(p, 1, (size_t)len, stdout);
		p += len;
	}
	putchar('"');
}

/* Print "ok" JSON for commands without a result body. */
void json_ok(const char *name, const char *extra_key, int64_t extra)
{
	printf("{\"ok\":true");
	if (name != NULL) {
		printf(",\"name\":");
		json_str(name);
	}
	if (extra_key != NULL)
		printf(",\"%s\":%" PRId64, extra_key, extra);
	printf("}\n");
}

/* The mode as semctl spells it. */
const char *mode_name(enum semc_mode m)
{
	return m == SEMC_MODE_SIGNAL ? "signal" : m == SEMC_MODE_RATE ? "rate" : "owned";
}

/* A rate as people write it: "5000/h", "10/s", "1/250ms". */
const char *rate_text(uint32_t rate, uint32_t period_ms, char *buf, size_t len)
{
	if (period_ms == 1000)
		snprintf(buf, len, "%u/s", rate);
	else if (period_ms == 60000)
		snprintf(buf, len, "%u/min", rate);
	else if (period_ms == 3600000)
		snprintf(buf, len, "%u/h", rate);
	else if (period_ms == 86400000)
		snprintf(buf, len, "%u/d", rate);
	else
		snprintf(buf, len, "%u/%ums", rate, period_ms);
	return buf;
}

/* Format a duration in ms for people. */
const char *fmt_dur(int64_t ms, char *buf, size_t len)
{
	if (ms < 0)
		ms = 0;
	if (ms < 1000)
		snprintf(buf, len, "%" PRId64 "ms", ms);
	else if (ms < 60000)
		snprintf(buf, len, "%.1fs", ms / 1000.0);
	else if (ms < 3600000)
		snprintf(buf, len, "%" PRId64 "m%02" PRId64 "s", ms / 60000, ms / 1000 % 60);
	else
		snprintf(buf, len, "%" PRId64 "h%02" PRId64 "m", ms / 3600000, ms / 60000 % 60);
	return buf;
}

/* A duration as a setting is written: "24h", "90s", "1500ms" (the
 * largest unit that divides it; days from 2 on). */
const char *fmt_exact(int64_t ms, char *buf, size_t len)
{
	static const struct { int64_t ms; const char *unit; } units[] = {
		{ 86400000, "d" }, { 3600000, "h" }, { 60000, "min" }, { 1000, "s" },
	};
	size_t i;

	for (i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (ms > 0 && ms % units[i].ms == 0 && (i > 0 || ms > units[i].ms)) {
			snprintf(buf, len, "%" PRId64 "%s", ms / units[i].ms, units[i].unit);
			return buf;
		}
	}
	snprintf(buf, len, "%" PRId64 "ms", ms);
	return buf;
}

/* Wall-clock ms. */
int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Format a unix time in ms as local "YYYY-mm-dd HH:MM:SS". */
const char *fmt_time(uint64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms == 0 || localtime_r(&t, &tm) == NULL)
		snprintf(buf, len, "-");
	else
		strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
	return buf;
}

/* Monotonic ms. */
int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
