/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli/help.c - what semctl says about itself, all of it from the
 * option and command tables (tables.c): --help, `help COMMAND` (and
 * `COMMAND --help`), `--json help` (the tables as JSON, which the docs
 * test compares with semctl(1)), a usage error with the command's
 * synopses, and the shell completions' answers (`semctl __complete
 * WORD...`).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/semctl.h"

#define HELP_WIDTH	79	/* wrap at this column */
#define HELP_COL	24	/* an option's help starts here */

/* Print a usage error (with the command's synopses when forms) and exit 2,
 * with --json also as one JSON object. */
static void usage_exit(bool forms, const char *msg) __attribute__((noreturn));
static void usage_exit(bool forms, const char *msg)
{
	const struct cmd_def *d = g.def;
	int i;

	fprintf(stderr, "semctl: %s\n", esc(msg));
	for (i = 0; forms && d != NULL && i < CMD_FORMS && d->forms[i] != NULL; i++)
		fprintf(stderr, "%s semctl %s%s%s\n", i ? "      " : "usage:", d->name,
			*d->forms[i] ? " " : "", d->forms[i]);
	if (d != NULL)
		fprintf(stderr, "Try 'semctl help %s'.\n", d->name);
	else
		fprintf(stderr, "Try 'semctl --help'.\n");
	if (g.json) {
		printf("{\"ok\":false,\"error\":\"usage\",\"code\":%d,\"message\":", SEMC_E_ARG);
		json_str(msg);
		if (d != NULL) {
			printf(",\"command\":");
			json_str(d->name);
		}
		printf(",\"exit\":%d}\n", EX_USAGE_);
	}
	exit(EX_USAGE_);
}

/* A usage error of the message fmt and ap, with the command's synopses when forms. */
static void usage_vexit(bool forms, const char *fmt, va_list ap)
	__attribute__((noreturn, format(printf, 2, 0)));
static void usage_vexit(bool forms, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof msg, fmt, ap);
	usage_exit(forms, msg);
}

/* A usage error: the message, and where to find help. */
void usage_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	usage_vexit(false, fmt, ap);
	va_end(ap);
}

/* A usage error of the command's arguments: the message and its synopses. */
void usage_forms(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	usage_vexit(true, fmt, ap);
	va_end(ap);
}

/*
 * Print text wrapped at HELP_WIDTH: the cursor is at column col, which is
 * indent when the line holds nothing yet; continuation lines are indented
 * by indent.
 */
static void wrap(const char *text, int col, int indent)
{
	const char *p = text;
	int len;

	for (;;) {
		while (*p == ' ')
			p++;
		if (*p == '\0')
			break;
		len = (int)strcspn(p, " ");
		if (col > indent && col + 1 + len > HELP_WIDTH) {
			printf("\n%*s", indent, "");
			col = indent;
		} else if (col > indent) {
			putchar(' ');
			col++;
		}
		printf("%.*s", len, p);
		col += len;
		p += len;
	}
	putchar('\n');
}

/* An option as written in the help: "-s, --server ADDR", "-n N", "--max N". */
static int opt_text(enum opt_id id, char *buf, size_t len)
{
	const struct opt_def *o = &opt_defs[id];
	char s[4] = "";

	if (o->letter != 0)
		snprintf(s, sizeof s, "-%c", o->letter);
	return snprintf(buf, len, "%s%s%s%s%s%s", s, *s && o->name ? ", " : "",
			o->name ? "--" : "", o->name ? o->name : "",
			o->value && !opt_value_optional(id) ? " " : "", o->value ? o->value : "");
}

/* One option line: the option, then its help from HELP_COL on. */
static void opt_line(enum opt_id id, const char *help)
{
	char b[96];
	int n = opt_text(id, b, sizeof b);

	printf("  %s", b);
	if (n + 2 >= HELP_COL - 1)
		printf("\n%*s", HELP_COL, "");
	else
		printf("%*s", HELP_COL - n - 2, "");
	wrap(help, HELP_COL, HELP_COL);
}

/* A command's synopses, as "semctl NAME FORM" lines after a prefix. */
static void forms(const struct cmd_def *d, const char *first, const char *others)
{
	int i;

	for (i = 0; i < CMD_FORMS && d->forms[i] != NULL; i++)
		printf("%s%s%s%s\n", i ? others : first, d->name, *d->forms[i] ? " " : "",
		       d->forms[i]);
}

/* The global options' lines. */
static void globals_text(void)
{
	size_t i;

	for (i = OPT_FIRST_GLOBAL; i < OPT_COUNT; i++)
		opt_line((enum opt_id)i, opt_defs[i].help);
}

/* An option as JSON. */
static void opt_json(enum opt_id id, const char *help)
{
	const struct opt_def *o = &opt_defs[id];
	char s[4];

	printf("{\"short\":");
	if (o->letter != 0) {
		snprintf(s, sizeof s, "-%c", o->letter);
		json_str(s);
	} else {
		printf("null");
	}
	printf(",\"long\":");
	if (o->name != NULL)
		printf("\"--%s\"", o->name);
	else
		printf("null");
	printf(",\"value\":");
	if (o->value != NULL)
		json_str(o->value);
	else
		printf("null");
	printf(",\"help\":");
	json_str(help);
	printf("}");
}

/* A command as JSON: name, synopses, help, options. */
static void cmd_json(const struct cmd_def *d)
{
	char line[512];
	int i;

	printf("{\"name\":");
	json_str(d->name);
	printf(",\"usage\":[");
	for (i = 0; i < CMD_FORMS && d->forms[i] != NULL; i++) {
		snprintf(line, sizeof line, "semctl %s%s%s", d->name, *d->forms[i] ? " " : "",
			 d->forms[i]);
		printf("%s", i ? "," : "");
		json_str(line);
	}
	printf("],\"help\":");
	json_str(d->help);
	printf(",\"options\":[");
	for (i = 0; i < CMD_OPTS && d->opts[i].id != OPT_NONE; i++) {
		printf("%s", i ? "," : "");
		opt_json(d->opts[i].id, d->opts[i].help);
	}
	printf("]}");
}

/* The tables as one JSON object: every command (or only d) and the
 * global options. */
static void help_json(const struct cmd_def *d)
{
	size_t i;

	printf("{\"ok\":true,\"commands\":[");
	for (i = 0; i < cmd_count; i++) {
		if (d != NULL && d != &cmd_defs[i])
			continue;
		printf("%s", i && d == NULL ? "," : "");
		cmd_json(&cmd_defs[i]);
	}
	printf("],\"options\":[");
	for (i = OPT_FIRST_GLOBAL; i < OPT_COUNT; i++) {
		printf("%s", i > OPT_FIRST_GLOBAL ? "," : "");
		opt_json((enum opt_id)i, opt_defs[i].help);
	}
	printf("]}\n");
}

/* semctl --help: every command's synopses and the global options. */
void help_global(void)
{
	size_t i;

	if (g.json) {
		help_json(NULL);
		return;
	}
	printf("usage: semctl [OPTION]... COMMAND [ARG]...\n\nCommands:\n");
	for (i = 0; i < cmd_count; i++)
		forms(&cmd_defs[i], "  ", "  ");
	printf("\nOptions, before or after the command:\n");
	globals_text();
	printf("\nDurations: 250ms, 5s, 2m or 2min, 1h, 1d, 1.5s (a bare number is "
	       "seconds).\n"
	       "Exit: 0 ok, 1 timed out or would block, 2 usage, 3 server unreachable,\n"
	       "      4 permission denied, 5 hold lost, 6 other error, 7 deadlock,\n"
	       "      8 queue full (--max-waiters), 9 replaced (down --replace),\n"
	       "      128+N interrupted by signal N while waiting; run: the command's.\n"
	       "'semctl help COMMAND' describes a command and its options; see semctl(1).\n");
}

/* semctl help COMMAND, semctl COMMAND --help. */
void help_command(const struct cmd_def *d)
{
	int i;

	if (g.json) {
		help_json(d);
		return;
	}
	forms(d, "usage: semctl ", "       semctl ");
	printf("\n");
	wrap(d->help, 0, 0);
	if (d->opts[0].id != OPT_NONE)
		printf("\nOptions:\n");
	for (i = 0; i < CMD_OPTS && d->opts[i].id != OPT_NONE; i++)
		opt_line(d->opts[i].id, d->opts[i].help);
	printf("\nGlobal options, before or after the command:\n");
	globals_text();
}

/* help [COMMAND] */
int cmd_help(struct cmd_args *a)
{
	const struct cmd_def *d;

	if (a->argc == 0) {
		help_global();
		return EX_OK_;
	}
	if ((d = cmd_find(a->argv[0])) == NULL)
		usage_fail("help: unknown command '%s'", a->argv[0]);
	help_command(d);
	return EX_OK_;
}

/* --- completion ----------------------------------------------------------- */

/* The option a whole word names ("-s", "--server"; not "--server=x"). */
static enum opt_id opt_word(const char *w)
{
	size_t i;

	for (i = OPT_NONE + 1; i < OPT_COUNT; i++) {
		const struct opt_def *o = &opt_defs[i];

		if ((o->name != NULL && w[0] == '-' && w[1] == '-' && strcmp(w + 2, o->name) == 0) ||
		    (o->letter != 0 && w[0] == '-' && w[1] == o->letter && w[2] == '\0'))
			return (enum opt_id)i;
	}
	return OPT_NONE;
}

/* Print w if it begins with cur. */
static void cand(const char *w, const char *cur)
{
	if (strncmp(w, cur, strlen(cur)) == 0)
		printf("%s\n", w);
}

/* The candidates of a space-separated list. */
static void cand_list(const char *list, const char *cur)
{
	char w[128];
	size_t n;

	while (*list != '\0') {
		n = strcspn(list, " ");
		if (n < sizeof w) {
			memcpy(w, list, n);
			w[n] = '\0';
			cand(w, cur);
		}
		list += n;
		while (*list == ' ')
			list++;
	}
}

/* An option's spellings as candidates. */
static void cand_opt(enum opt_id id, const char *cur)
{
	char b[64];

	if (opt_defs[id].name != NULL) {
		snprintf(b, sizeof b, "--%s", opt_defs[id].name);
		cand(b, cur);
	}
	if (opt_defs[id].letter != 0 && strncmp(cur, "--", 2) != 0) {
		snprintf(b, sizeof b, "-%c", opt_defs[id].letter);
		cand(b, cur);
	}
}

/* Does the word give an option that says which server and how to reach it
 * (-s, --tls-ca, ..., in any spelling)? Its value is in the next word when
 * *next. */
static bool reach_word(const char *w, bool *next)
{
	enum opt_id id = opt_word(w);
	size_t i, n;

	*next = id != OPT_NONE && opt_defs[id].value != NULL;
	if (id == OPT_NONE)
		for (i = OPT_FIRST_GLOBAL; i < OPT_COUNT && id == OPT_NONE; i++) {
			const char *name = opt_defs[i].name;

			n = name != NULL ? strlen(name) : 0;
			if ((n > 0 && strncmp(w, "--", 2) == 0 && strncmp(w + 2, name, n) == 0 &&
			     w[2 + n] == '=') ||
			    (opt_defs[i].letter != 0 && w[1] == opt_defs[i].letter))
				id = (enum opt_id)i;
		}
	return id == OPT_SERVER || id == OPT_TLS_CA || id == OPT_TLS_CERT ||
	       id == OPT_TLS_KEY || id == OPT_NO_TLS_RESUME;
}

/*
 * A NAME: "names", then the options of the line that reach the server, a
 * word a line, for the shell to run `semctl OPTIONS list CUR` with (a
 * bounded time: it is the shell's to bound).
 */
static void complete_names(int argc, char **argv)
{
	bool next;
	int i;

	printf("names\n");
	for (i = 0; i < argc - 1 && strcmp(argv[i], "--") != 0; i++)
		if (argv[i][0] == '-' && argv[i][1] != '\0' && reach_word(argv[i], &next)) {
			printf("%s\n", argv[i]);
			if (next && i + 1 < argc - 1)
				printf("%s\n", argv[++i]);
		}
}

/* The values of a completion spec: "@file", "@address", "@command", "@name"
 * or words. */
static void complete_spec(const char *spec, const char *cur, int argc, char **argv)
{
	size_t i;

	if (spec != NULL && strcmp(spec, "@name") == 0) {
		complete_names(argc, argv);
	} else if (spec == NULL) {
		printf("words\n");
	} else if (strcmp(spec, "@file") == 0) {
		printf("files\n");
	} else if (strcmp(spec, "@address") == 0) {
		printf("words-nospace\n");
		cand_list("unix:" SEMC_DEFAULT_UNIX " unix:/ tcp: tls:", cur);
	} else if (strcmp(spec, "@command") == 0) {
		printf("words\n");
		for (i = 0; i < cmd_count; i++)
			cand(cmd_defs[i].name, cur);
	} else {
		printf("words\n");
		cand_list(spec, cur);
	}
}

/*
 * semctl __complete WORD... CUR: what may follow, for the bash and zsh
 * completions (cli/semctl.bash-completion, semctl.zsh-completion). The
 * first line says what kind: "words" (the candidates follow, a line each),
 * "words-nospace" (the same, and no space after one), "files", "commands"
 * (the programs of $PATH), or "names" (the semaphores `semctl list` gives,
 * asked with the options that follow, a word a line).
 */
int complete_words(int argc, char **argv)
{
	const char *cur = argc > 0 ? argv[argc - 1] : "";
	const struct cmd_def *cmd = NULL;
	enum opt_id id, prev = OPT_NONE;
	int i, nargs = 0, after = -1;
	size_t k;

	for (i = 0; i < argc - 1; i++) {
		const char *w = argv[i];

		if (after >= 0) {
			after++;
		} else if (cmd != NULL && strcmp(w, "--") == 0) {
			after = 0;
		} else if (w[0] == '-' && w[1] != '\0') {
			id = opt_word(w);
			if (id != OPT_NONE && opt_defs[id].value != NULL &&
			    !opt_value_optional(id)) {
				if (i == argc - 2)
					prev = id;
				i++;
			}
		} else if (cmd == NULL) {
			if ((cmd = cmd_find(w)) == NULL)
				return EX_USAGE_;
		} else {
			nargs++;
		}
	}
	if (prev != OPT_NONE) {
		complete_spec(opt_defs[prev].complete, cur, argc, argv);
	} else if (after >= 0) {
		printf(after == 0 ? "commands\n" : "files\n");
	} else if (cmd == NULL && cur[0] != '-') {
		complete_spec("@command", cur, argc, argv);
	} else if (cur[0] == '-') {
		printf("words\n");
		for (i = 0; cmd != NULL && i < CMD_OPTS && cmd->opts[i].id != OPT_NONE; i++)
			cand_opt(cmd->opts[i].id, cur);
		for (k = OPT_FIRST_GLOBAL; k < OPT_COUNT; k++)
			cand_opt((enum opt_id)k, cur);
		if (cmd != NULL && strstr(cmd->forms[0], " -- ") != NULL)
			cand("--", cur);
	} else {
		/* NAME NAME...: each a name */
		complete_spec(nargs == 0 || (cmd->max_args < 0 && cmd->complete != NULL &&
					     strcmp(cmd->complete, "@name") == 0) ?
			      cmd->complete : NULL, cur, argc, argv);
	}
	return EX_OK_;
}
