/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/common/opts.h - the command line of the randomized tests, from a
 * table: options that take a number (-s seed, -n count, ...) and switches.
 * A test prints its seed, so that -s reruns a failure exactly.
 */
#ifndef SEMD_TESTS_COMMON_OPTS_H
#define SEMD_TESTS_COMMON_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* One option: -flag NUMBER into *num, or (num NULL) a switch setting *on. */
struct t_opt {
	char		flag;
	uint64_t	*num;
	bool		*on;
};

/*
 * Parse argv by opts (ended by a flag of 0). 0 when every option is in the
 * table; 2 (the tests' exit status for a bad command line) after printing
 * "usage: " and usage otherwise.
 */
static inline int t_opts_parse(int argc, char **argv, const struct t_opt *opts,
    const char *usage)
{
	const struct t_opt *o;
	char spec[64];
	size_t k = 0;
	int c;

	for (o = opts; o->flag != 0 && k + 3 <= sizeof(spec); o++) {
		spec[k++] = o->flag;
		if (o->num != NULL)
			spec[k++] = ':';
	}
	spec[k] = '\0';
	while ((c = getopt(argc, argv, spec)) != -1) {
		for (o = opts; o->flag != 0 && o->flag != c; o++)
			;
		if (o->flag == 0) {
			fprintf(stderr, "usage: %s\n", usage);
			return 2;
		}
		if (o->num != NULL)
			*o->num = strtoull(optarg, NULL, 0);
		else
			*o->on = true;
	}
	return 0;
}

#endif
