# SPDX-License-Identifier: BSD-2-Clause
# cli/ build fragment, included by the top Makefile.am
#
# semctl, the command line: a program on libsemclient's public API alone
# (client/semclient.h), as any other program of its users. Its folder is
# not named semctl/: the program is built as semctl at the top of the
# build tree, where the tests run it, and a folder of its objects cannot
# bear the same name there.
bin_PROGRAMS += semctl
noinst_HEADERS += cli/semctl.h
semctl_SOURCES = cli/semctl.c cli/tables.c cli/args.c cli/out.c cli/help.c cli/cmds.c \
	cli/set.c cli/backup.c cli/watch.c cli/run.c
semctl_CFLAGS = $(AM_CFLAGS) $(LTO_CFLAGS)
semctl_LDFLAGS = $(SAN_CFLAGS) $(LTO_LDFLAGS)
semctl_LDADD = client/libsemclient.la

# Its manual page and its bash and zsh completions.
dist_man_MANS += doc/semctl.1
bashcompletiondir = $(datadir)/bash-completion/completions
# installed as "semctl" (bash-completion loads completions by command name)
bashcompletion_DATA = cli/completion/semctl
# installed as "_semctl" where Debian's zsh looks (its fpath)
zshcompletiondir = $(datadir)/zsh/vendor-completions
zshcompletion_DATA = cli/completion/_semctl
CLEANFILES += cli/completion/semctl cli/completion/_semctl
EXTRA_DIST += cli/semctl.bash-completion cli/semctl.zsh-completion
cli/completion/semctl: $(top_srcdir)/cli/semctl.bash-completion
	$(AM_V_GEN)$(MKDIR_P) cli/completion && cp $(top_srcdir)/cli/semctl.bash-completion $@
cli/completion/_semctl: $(top_srcdir)/cli/semctl.zsh-completion
	$(AM_V_GEN)$(MKDIR_P) cli/completion && cp $(top_srcdir)/cli/semctl.zsh-completion $@
