#!/usr/bin/env bash
# Runs the shell blocks of examples/README.md and examples/*/README.md as written, so that
# the examples' instructions keep working. For scripts/test.sh; safe to run alone, and again
# (the READMEs write only under target/ or a temporary folder).
#
# What it runs: fenced blocks opened with ```sh, ```bash or ```console, not indented. In sh
# and bash blocks every line is a command, except blank lines and lines starting with `#`;
# in console blocks only lines starting with `$ ` are commands (the rest is output, not
# checked). A line ending in `\` continues on the next. Each command runs on its own in
# `bash -e -o pipefail -c`, with an empty standard input: no variable or `cd` carries over
# to the next command (write `cd DIR && ...` on one line). Each command is printed before it
# runs; the first that fails stops the script, naming the README, its line and the command.
#
# Markers (HTML comments, which Markdown does not show), on a line of their own:
#   <!-- run from: DIR -->      The following blocks run in DIR, relative to the repository
#                               root (`.` is the root), until the next such marker. A README
#                               has one before its first runnable block and says the same in
#                               words ("from the repository root", "from this folder").
#   <!-- ci: skip REASON -->    The next block is not run; REASON is printed.
#   <!-- ci: needs WHAT... -->  The next block runs only where every WHAT is present: a
#                               command on PATH, or `target:TRIPLE` for an installed rustup
#                               target. Otherwise it is skipped, naming what is missing.
#
# Afterwards `git status` may show nothing that it did not show before: a README command
# that writes into the source tree fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

readmes=(examples/README.md)
for f in examples/*/README.md; do readmes+=("$f"); done

in_git=0
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then in_git=1; fi
status_before=""
if [ $in_git = 1 ]; then status_before=$(git status --porcelain --untracked-files=all); fi

ran=0
skipped=0

# Prints what of "$@" (commands, target:TRIPLE) is missing; nothing when all are present.
missing() {
    local out=() w installed=""
    for w in "$@"; do
        case $w in
            target:*)
                if [ -z "$installed" ]; then installed=$(rustup target list --installed 2>/dev/null || echo none); fi
                grep -qx "${w#target:}" <<<"$installed" || out+=("the ${w#target:} target")
                ;;
            *) command -v "$w" >/dev/null 2>&1 || out+=("$w") ;;
        esac
    done
    echo "${out[*]}"
}

# run_block README LINE KIND DIR SKIP NEEDS: the block's lines are in the array `block`
# (with their line numbers in `block_lines`).
run_block() {
    local readme=$1 start=$2 kind=$3 dir=$4 skip=$5 needs=$6
    if [ -n "$skip" ]; then
        echo "example_readmes: skipped $readme:$start: $skip"
        skipped=$((skipped + 1))
        return
    fi
    if [ -n "$needs" ]; then
        local lack
        # shellcheck disable=SC2086 # a list of words
        lack=$(missing $needs)
        if [ -n "$lack" ]; then
            echo "example_readmes: skipped $readme:$start: needs $lack"
            skipped=$((skipped + 1))
            return
        fi
    fi
    if [ -z "$dir" ]; then
        echo "example_readmes: $readme:$start: no <!-- run from: DIR --> marker before this block" >&2
        exit 1
    fi
    if [ ! -d "$root/$dir" ]; then
        echo "example_readmes: $readme:$start: folder '$dir' (run from) does not exist" >&2
        exit 1
    fi
    local i cmd="" cmd_line=0 line text
    for i in "${!block[@]}"; do
        line=${block[$i]}
        if [ -z "$cmd" ]; then
            # The start of a command.
            if [ "$kind" = console ]; then
                [[ $line == '$ '* ]] || continue
                text=${line#'$ '}
            else
                text=$line
                [[ $text =~ $re_blank_or_comment ]] && continue
            fi
            cmd_line=${block_lines[$i]}
        else
            text=$line
        fi
        if [[ $text == *'\' ]]; then
            cmd+="${text%'\'}"
            continue
        fi
        cmd+=$text
        echo "+ ($dir) $cmd"
        local rc=0 t0=$SECONDS
        # Standard input is not the README being read.
        (cd "$root/$dir" && bash -e -o pipefail -c "$cmd" </dev/null) || rc=$?
        # Slow commands name their time, so a slow CI step says where it went.
        if [ $((SECONDS - t0)) -ge 10 ]; then echo "  ($((SECONDS - t0)) s)"; fi
        if [ $rc != 0 ]; then
            echo "example_readmes: FAILED (exit status $rc): $readme:$cmd_line, run from $dir:" >&2
            echo "    $cmd" >&2
            exit 1
        fi
        ran=$((ran + 1))
        cmd=""
    done
    if [ -n "$cmd" ]; then
        echo "example_readmes: $readme:$cmd_line: the last command ends with a '\\' continuation" >&2
        exit 1
    fi
}

# Markers and fences (regular expressions kept in variables, as bash's =~ wants them).
re_from='^<!-- run from: *(.*[^ ]) *-->[[:space:]]*$'
re_skip='^<!-- ci: skip *(.*[^ ]) *-->[[:space:]]*$'
re_needs='^<!-- ci: needs *(.*[^ ]) *-->[[:space:]]*$'
re_marker='^<!-- (run|ci)'
re_open='^```(sh|bash|console)[[:space:]]*$'
re_other='^```'
re_close='^```[[:space:]]*$'
re_blank_or_comment='^[[:space:]]*(#.*)?$'

for readme in "${readmes[@]}"; do
    echo "example_readmes: $readme"
    dir="" skip="" needs="" fence="" kind="" start=0 n=0
    block=() block_lines=()
    while IFS= read -r line || [ -n "$line" ]; do
        n=$((n + 1))
        if [ -n "$fence" ]; then
            if [[ $line =~ $re_close ]]; then
                if [ "$fence" = run ]; then run_block "$readme" "$start" "$kind" "$dir" "$skip" "$needs"; fi
                fence="" skip="" needs=""
                block=() block_lines=()
            elif [ "$fence" = run ]; then
                block+=("$line")
                block_lines+=("$n")
            fi
            continue
        fi
        if [[ $line =~ $re_from ]]; then
            dir=${BASH_REMATCH[1]}
        elif [[ $line =~ $re_skip ]]; then
            skip=${BASH_REMATCH[1]}
        elif [[ $line =~ $re_needs ]]; then
            needs=${BASH_REMATCH[1]}
        elif [[ $line =~ $re_marker ]]; then
            echo "example_readmes: $readme:$n: a marker this script does not know: $line" >&2
            exit 1
        elif [[ $line =~ $re_open ]]; then
            fence=run kind=${BASH_REMATCH[1]} start=$n
        elif [[ $line =~ $re_other ]]; then
            # Another language: not run, and a pending marker was meant for a shell block.
            if [ -n "$skip$needs" ]; then
                echo "example_readmes: $readme:$n: a ci marker before a block that is not sh, bash or console" >&2
                exit 1
            fi
            fence=other
        fi
    done <"$readme"
    if [ -n "$fence" ]; then
        echo "example_readmes: $readme:$start: the block is not closed" >&2
        exit 1
    fi
done

if [ $in_git = 1 ]; then
    # Only entries that are new count: a file someone commits or reverts meanwhile is not
    # the READMEs' doing.
    new=$(comm -13 <(sort <<<"$status_before") <(git status --porcelain --untracked-files=all | sort))
    if [ -n "$new" ]; then
        echo "example_readmes: the commands changed the source tree (new in git status):" >&2
        echo "$new" >&2
        exit 1
    fi
fi
echo "example_readmes: $ran commands ran, $skipped blocks skipped"
