# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_swarm_global_optspecs
    string join \n C/directory= q/quiet json color= progress= config= from-hook goal= goals-file= plan-out= plan-only j/jobs= max-writers= agent= model= api-base= request-timeout= endpoint-wait= max-turns= max-task-tokens= budget-tokens= allow-program= task-timeout= stall-timeout= kill-grace= retries= check= final-out= final-out-dir= base= land= worktree-dir= resolve-conflicts fresh-retries on-escalate= h/help V/version
end

function __fish_swarm_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_swarm_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_swarm_using_subcommand
    set -l cmd (__fish_swarm_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c swarm -n "__fish_swarm_needs_command" -s C -l directory -d 'Run as if started in DIR' -r -F
complete -c swarm -n "__fish_swarm_needs_command" -l color -d 'Colour what swarm prints on stderr: auto (on a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces colours), always or never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c swarm -n "__fish_swarm_needs_command" -l progress -d 'How a run shows its progress on stderr: auto (a live display on a terminal, plain lines otherwise), plain, or json (each event of the run\'s log as one JSON line, as `swarm logs --json` prints them)' -r -f -a "auto\t''
plain\t''
json\t''"
complete -c swarm -n "__fish_swarm_needs_command" -l config -d 'Read this configuration file instead of the user\'s (~/.config/swarm/config.toml)' -r -F
complete -c swarm -n "__fish_swarm_needs_command" -l goal -d 'What to do, in prose: planned by the model, then run. Give it several times for several goals: the model infers which goal needs which; independent goals run at once, a goal that needs others is planned once they are done and merged' -r
complete -c swarm -n "__fish_swarm_needs_command" -l goals-file -d 'Read goals from FILE, one a line (blank lines and lines starting with # are skipped), as if each were given with --goal' -r -F
complete -c swarm -n "__fish_swarm_needs_command" -l plan-out -d 'Write the (repaired) plan to FILE in the task-file format (`swarm run FILE` runs it)' -r -F
complete -c swarm -n "__fish_swarm_needs_command" -s j -l jobs -d 'Run at most N tasks at once [default: 4]' -r
complete -c swarm -n "__fish_swarm_needs_command" -l max-writers -d 'Run at most N writers at once [default: the value of --jobs]' -r
complete -c swarm -n "__fish_swarm_needs_command" -l agent -d 'The agent for prompt tasks: auto, openai (built in), claude, codex, a profile from the configuration, exec:CMD (CMD run with `sh -c`, prompt on stdin, result on stdout), or acp:CMD (CMD run with `sh -c`, spoken to in the Agent Client Protocol) [default: auto]' -r
complete -c swarm -n "__fish_swarm_needs_command" -l model -d 'The model of the built-in agent and the planner (else SWARM_MODEL) [default: gpt-4o-mini]' -r
complete -c swarm -n "__fish_swarm_needs_command" -l api-base -d 'The OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (else SWARM_API_BASE, OPENAI_BASE_URL) [default: https://api.openai.com/v1]. The key comes from SWARM_API_KEY or OPENAI_API_KEY only' -r
complete -c swarm -n "__fish_swarm_needs_command" -l request-timeout -d 'Give up on a model request that has not answered after this long, and retry it [default: 5m]' -r
complete -c swarm -n "__fish_swarm_needs_command" -l endpoint-wait -d 'When the model endpoint stops answering (connections refused or timing out, several in a row): how long new attempts wait while swarm checks it every few seconds, before the run stops, resumable (exit 75); 0 stops at once [default: 5m]' -r
complete -c swarm -n "__fish_swarm_needs_command" -l max-turns -d 'The built-in agent\'s cap on model turns per attempt [default: 40]' -r
complete -c swarm -n "__fish_swarm_needs_command" -l max-task-tokens -d 'The built-in agent\'s cap on tokens per attempt [default: 400000]' -r
complete -c swarm -n "__fish_swarm_needs_command" -l budget-tokens -d 'Once the run\'s tasks have used N tokens in all, start nothing new: running tasks finish and finished writers are merged, then the run stops, resumable (exit 75); resume it with a larger --budget-tokens [default: no budget]' -r
complete -c swarm -n "__fish_swarm_needs_command" -l allow-program -d 'Let the built-in agent run PROGRAM (no shell; repeat for several)' -r
complete -c swarm -n "__fish_swarm_needs_command" -l task-timeout -d 'Stop an attempt after this long (e.g. 90s, 20m, 1h) [default: 30m]' -r
complete -c swarm -n "__fish_swarm_needs_command" -l stall-timeout -d 'Stop an attempt as hung when it writes nothing (stdout or stderr) for DURATION; it counts as a failed attempt, like a timeout. For agents that show progress as they go (codex --json, scripts that log); Claude\'s JSON output, for one, comes only at the end [default: off]' -r
complete -c swarm -n "__fish_swarm_needs_command" -l kill-grace -d 'How long a stopped attempt (a timeout, a hang, Ctrl-C) has between SIGTERM and SIGKILL to clean up; 0 kills at once [default: 2s]' -r
complete -c swarm -n "__fish_swarm_needs_command" -l retries -d 'Retry a failed attempt up to N times, with backoff [default: 1]' -r
complete -c swarm -n "__fish_swarm_needs_command" -l check -d 'Verify each writer with CMD (run with `sh -c` in its checkout) before it is merged' -r
complete -c swarm -n "__fish_swarm_needs_command" -l final-out -d 'Write the reducer\'s result and the run summary to FILE. With several goals: one section per goal (its reducer\'s result), then one run summary with the goal graph and the task graph' -r -F
complete -c swarm -n "__fish_swarm_needs_command" -l final-out-dir -d 'With several goals, also write one report per goal to DIR/<goal id>.md (its section and its tasks); DIR is created if needed' -r -F
complete -c swarm -n "__fish_swarm_needs_command" -l base -d 'Start the run from REV [default: HEAD]' -r
complete -c swarm -n "__fish_swarm_needs_command" -l land -d 'What to do with the finished integration branch [default: auto]' -r -f -a "auto\t'Fast-forward the user\'s branch when it is clean and still at the base; else keep the branch'
branch\t'Always keep the integration branch and say how to take it'
none\t'Keep the integration branch and say nothing about it'"
complete -c swarm -n "__fish_swarm_needs_command" -l worktree-dir -d 'Put task checkouts and snapshots under DIR [default: the user cache dir]' -r -F
complete -c swarm -n "__fish_swarm_needs_command" -l on-escalate -d 'Run CMD once per escalation (parked branch), with the details as JSON on stdin' -r
complete -c swarm -n "__fish_swarm_needs_command" -s q -l quiet -d 'Print nothing on stderr but errors'
complete -c swarm -n "__fish_swarm_needs_command" -l json -d 'Print JSON on stdout instead of text (each command\'s --help says what)'
complete -c swarm -n "__fish_swarm_needs_command" -l from-hook -d 'Run as from a git hook: landing defaults to `branch`, so the checkout git is working on is never touched. Also the case when git\'s hook variables (GIT_INDEX_FILE, GIT_DIR) are set'
complete -c swarm -n "__fish_swarm_needs_command" -l plan-only -d 'Plan only: write the plan (to --plan-out, else stdout) and run nothing'
complete -c swarm -n "__fish_swarm_needs_command" -l resolve-conflicts -d 'Before parking a conflicting writer, give its agent one attempt at resolving the conflict (in a fresh checkout holding the conflicted merge; checked like any writer)'
complete -c swarm -n "__fish_swarm_needs_command" -l fresh-retries -d 'Start every retry afresh. Without it, a retry after a timeout, a usage-limit pause, an interruption or a crash continues the Claude or Codex session of the attempt it follows, in the same checkout, so the work already paid for is not redone'
complete -c swarm -n "__fish_swarm_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c swarm -n "__fish_swarm_needs_command" -s V -l version -d 'Print version'
complete -c swarm -n "__fish_swarm_needs_command" -f -a "run" -d 'Run a task file (JSONL, one task per line)'
complete -c swarm -n "__fish_swarm_needs_command" -f -a "resume" -d 'Continue an interrupted run (the newest unfinished one by default)'
complete -c swarm -n "__fish_swarm_needs_command" -f -a "runs" -d 'List the runs of this repository, newest first'
complete -c swarm -n "__fish_swarm_needs_command" -f -a "show" -d 'Show one task of a run: its spec, status, attempts, result, changed files and transcript'
complete -c swarm -n "__fish_swarm_needs_command" -f -a "status" -d 'Show the tasks of a run (the newest by default)'
complete -c swarm -n "__fish_swarm_needs_command" -f -a "logs" -d 'Show a run\'s event log (the newest run by default)'
complete -c swarm -n "__fish_swarm_needs_command" -f -a "graph" -d 'Print a run\'s or a task file\'s DAG'
complete -c swarm -n "__fish_swarm_needs_command" -f -a "config" -d 'Show the effective settings and where each came from (flags, SWARM_* variables, .swarm.toml, the user\'s config file, defaults), and the agent profiles'
complete -c swarm -n "__fish_swarm_needs_command" -f -a "queue" -d 'A durable queue of goals in the repository\'s board, drained as one multi-goal run'
complete -c swarm -n "__fish_swarm_needs_command" -f -a "gc" -d 'Remove the checkouts of finished tasks and the deps\' files killed runs left behind; a branch with unmerged commits is never deleted'
complete -c swarm -n "__fish_swarm_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c swarm -n "__fish_swarm_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c swarm -n "__fish_swarm_using_subcommand run" -s j -l jobs -d 'Run at most N tasks at once [default: 4]' -r
complete -c swarm -n "__fish_swarm_using_subcommand run" -l max-writers -d 'Run at most N writers at once [default: the value of --jobs]' -r
complete -c swarm -n "__fish_swarm_using_subcommand run" -l agent -d 'The agent for prompt tasks: auto, openai (built in), claude, codex, a profile from the configuration, exec:CMD (CMD run with `sh -c`, prompt on stdin, result on stdout), or acp:CMD (CMD run with `sh -c`, spoken to in the Agent Client Protocol) [default: auto]' -r
complete -c swarm -n "__fish_swarm_using_subcommand run" -l model -d 'The model of the built-in agent and the planner (else SWARM_MODEL) [default: gpt-4o-mini]' -r
complete -c swarm -n "__fish_swarm_using_subcommand run" -l api-base -d 'The OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (else SWARM_API_BASE, OPENAI_BASE_URL) [default: https://api.openai.com/v1]. The key comes from SWARM_API_KEY or OPENAI_API_KEY only' -r
complete -c swarm -n "__fish_swarm_using_subcommand run" -l request-timeout -d 'Give up on a model request that has not answered after this long, and retry it [default: 5m]' -r
complete -c swarm -n "__fish_swarm_using_subcommand run" -l endpoint-wait -d 'When the model endpoint stops answering (connections refused or timing out, several in a row): how long new attempts wait while swarm checks it every few seconds, before the run stops, resumable (exit 75); 0 stops at once [default: 5m]' -r
complete -c swarm -n "__fish_swarm_using_subcommand run" -l max-turns -d 'The built-in agent\'s cap on model turns per attempt [default: 40]' -r
complete -c swarm -n "__fish_swarm_using_subcommand run" -l max-task-tokens -d 'The built-in agent\'s cap on tokens per attempt [default: 400000]' -r
complete -c swarm -n "__fish_swarm_using_subcommand run" -l budget-tokens -d 'Once the run\'s tasks have used N tokens in all, start nothing new: running tasks finish and finished writers are merged, then the run stops, resumable (exit 75); resume it with a larger --budget-tokens [default: no budget]' -r
complete -c swarm -n "__fish_swarm_using_subcommand run" -l allow-program -d 'Let the built-in agent run PROGRAM (no shell; repeat for several)' -r
complete -c swarm -n "__fish_swarm_using_subcommand run" -l task-timeout -d 'Stop an attempt after this long (e.g. 90s, 20m, 1h) [default: 30m]' -r
complete -c swarm -n "__fish_swarm_using_subcommand run" -l stall-timeout -d 'Stop an attempt as hung when it writes nothing (stdout or stderr) for DURATION; it counts as a failed attempt, like a timeout. For agents that show progress as they go (codex --json, scripts that log); Claude\'s JSON output, for one, comes only at the end [default: off]' -r
complete -c swarm -n "__fish_swarm_using_subcommand run" -l kill-grace -d 'How long a stopped attempt (a timeout, a hang, Ctrl-C) has between SIGTERM and SIGKILL to clean up; 0 kills at once [default: 2s]' -r
complete -c swarm -n "__fish_swarm_using_subcommand run" -l retries -d 'Retry a failed attempt up to N times, with backoff [default: 1]' -r
complete -c swarm -n "__fish_swarm_using_subcommand run" -l check -d 'Verify each writer with CMD (run with `sh -c` in its checkout) before it is merged' -r
complete -c swarm -n "__fish_swarm_using_subcommand run" -l final-out -d 'Write the reducer\'s result and the run summary to FILE. With several goals: one section per goal (its reducer\'s result), then one run summary with the goal graph and the task graph' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand run" -l final-out-dir -d 'With several goals, also write one report per goal to DIR/<goal id>.md (its section and its tasks); DIR is created if needed' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand run" -l base -d 'Start the run from REV [default: HEAD]' -r
complete -c swarm -n "__fish_swarm_using_subcommand run" -l land -d 'What to do with the finished integration branch [default: auto]' -r -f -a "auto\t'Fast-forward the user\'s branch when it is clean and still at the base; else keep the branch'
branch\t'Always keep the integration branch and say how to take it'
none\t'Keep the integration branch and say nothing about it'"
complete -c swarm -n "__fish_swarm_using_subcommand run" -l worktree-dir -d 'Put task checkouts and snapshots under DIR [default: the user cache dir]' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand run" -l on-escalate -d 'Run CMD once per escalation (parked branch), with the details as JSON on stdin' -r
complete -c swarm -n "__fish_swarm_using_subcommand run" -s C -l directory -d 'Run as if started in DIR' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand run" -l color -d 'Colour what swarm prints on stderr: auto (on a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces colours), always or never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c swarm -n "__fish_swarm_using_subcommand run" -l progress -d 'How a run shows its progress on stderr: auto (a live display on a terminal, plain lines otherwise), plain, or json (each event of the run\'s log as one JSON line, as `swarm logs --json` prints them)' -r -f -a "auto\t''
plain\t''
json\t''"
complete -c swarm -n "__fish_swarm_using_subcommand run" -l config -d 'Read this configuration file instead of the user\'s (~/.config/swarm/config.toml)' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand run" -l resolve-conflicts -d 'Before parking a conflicting writer, give its agent one attempt at resolving the conflict (in a fresh checkout holding the conflicted merge; checked like any writer)'
complete -c swarm -n "__fish_swarm_using_subcommand run" -l fresh-retries -d 'Start every retry afresh. Without it, a retry after a timeout, a usage-limit pause, an interruption or a crash continues the Claude or Codex session of the attempt it follows, in the same checkout, so the work already paid for is not redone'
complete -c swarm -n "__fish_swarm_using_subcommand run" -s q -l quiet -d 'Print nothing on stderr but errors'
complete -c swarm -n "__fish_swarm_using_subcommand run" -l json -d 'Print JSON on stdout instead of text (each command\'s --help says what)'
complete -c swarm -n "__fish_swarm_using_subcommand run" -l from-hook -d 'Run as from a git hook: landing defaults to `branch`, so the checkout git is working on is never touched. Also the case when git\'s hook variables (GIT_INDEX_FILE, GIT_DIR) are set'
complete -c swarm -n "__fish_swarm_using_subcommand run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c swarm -n "__fish_swarm_using_subcommand resume" -s j -l jobs -d 'Run at most N tasks at once [default: 4]' -r
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l max-writers -d 'Run at most N writers at once [default: the value of --jobs]' -r
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l agent -d 'The agent for prompt tasks: auto, openai (built in), claude, codex, a profile from the configuration, exec:CMD (CMD run with `sh -c`, prompt on stdin, result on stdout), or acp:CMD (CMD run with `sh -c`, spoken to in the Agent Client Protocol) [default: auto]' -r
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l model -d 'The model of the built-in agent and the planner (else SWARM_MODEL) [default: gpt-4o-mini]' -r
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l api-base -d 'The OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (else SWARM_API_BASE, OPENAI_BASE_URL) [default: https://api.openai.com/v1]. The key comes from SWARM_API_KEY or OPENAI_API_KEY only' -r
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l request-timeout -d 'Give up on a model request that has not answered after this long, and retry it [default: 5m]' -r
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l endpoint-wait -d 'When the model endpoint stops answering (connections refused or timing out, several in a row): how long new attempts wait while swarm checks it every few seconds, before the run stops, resumable (exit 75); 0 stops at once [default: 5m]' -r
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l max-turns -d 'The built-in agent\'s cap on model turns per attempt [default: 40]' -r
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l max-task-tokens -d 'The built-in agent\'s cap on tokens per attempt [default: 400000]' -r
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l budget-tokens -d 'Once the run\'s tasks have used N tokens in all, start nothing new: running tasks finish and finished writers are merged, then the run stops, resumable (exit 75); resume it with a larger --budget-tokens [default: no budget]' -r
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l allow-program -d 'Let the built-in agent run PROGRAM (no shell; repeat for several)' -r
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l task-timeout -d 'Stop an attempt after this long (e.g. 90s, 20m, 1h) [default: 30m]' -r
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l stall-timeout -d 'Stop an attempt as hung when it writes nothing (stdout or stderr) for DURATION; it counts as a failed attempt, like a timeout. For agents that show progress as they go (codex --json, scripts that log); Claude\'s JSON output, for one, comes only at the end [default: off]' -r
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l kill-grace -d 'How long a stopped attempt (a timeout, a hang, Ctrl-C) has between SIGTERM and SIGKILL to clean up; 0 kills at once [default: 2s]' -r
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l retries -d 'Retry a failed attempt up to N times, with backoff [default: 1]' -r
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l check -d 'Verify each writer with CMD (run with `sh -c` in its checkout) before it is merged' -r
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l final-out -d 'Write the reducer\'s result and the run summary to FILE. With several goals: one section per goal (its reducer\'s result), then one run summary with the goal graph and the task graph' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l final-out-dir -d 'With several goals, also write one report per goal to DIR/<goal id>.md (its section and its tasks); DIR is created if needed' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l base -d 'Start the run from REV [default: HEAD]' -r
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l land -d 'What to do with the finished integration branch [default: auto]' -r -f -a "auto\t'Fast-forward the user\'s branch when it is clean and still at the base; else keep the branch'
branch\t'Always keep the integration branch and say how to take it'
none\t'Keep the integration branch and say nothing about it'"
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l worktree-dir -d 'Put task checkouts and snapshots under DIR [default: the user cache dir]' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l on-escalate -d 'Run CMD once per escalation (parked branch), with the details as JSON on stdin' -r
complete -c swarm -n "__fish_swarm_using_subcommand resume" -s C -l directory -d 'Run as if started in DIR' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l color -d 'Colour what swarm prints on stderr: auto (on a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces colours), always or never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l progress -d 'How a run shows its progress on stderr: auto (a live display on a terminal, plain lines otherwise), plain, or json (each event of the run\'s log as one JSON line, as `swarm logs --json` prints them)' -r -f -a "auto\t''
plain\t''
json\t''"
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l config -d 'Read this configuration file instead of the user\'s (~/.config/swarm/config.toml)' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l resolve-conflicts -d 'Before parking a conflicting writer, give its agent one attempt at resolving the conflict (in a fresh checkout holding the conflicted merge; checked like any writer)'
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l fresh-retries -d 'Start every retry afresh. Without it, a retry after a timeout, a usage-limit pause, an interruption or a crash continues the Claude or Codex session of the attempt it follows, in the same checkout, so the work already paid for is not redone'
complete -c swarm -n "__fish_swarm_using_subcommand resume" -s q -l quiet -d 'Print nothing on stderr but errors'
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l json -d 'Print JSON on stdout instead of text (each command\'s --help says what)'
complete -c swarm -n "__fish_swarm_using_subcommand resume" -l from-hook -d 'Run as from a git hook: landing defaults to `branch`, so the checkout git is working on is never touched. Also the case when git\'s hook variables (GIT_INDEX_FILE, GIT_DIR) are set'
complete -c swarm -n "__fish_swarm_using_subcommand resume" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c swarm -n "__fish_swarm_using_subcommand runs" -s C -l directory -d 'Run as if started in DIR' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand runs" -l color -d 'Colour what swarm prints on stderr: auto (on a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces colours), always or never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c swarm -n "__fish_swarm_using_subcommand runs" -l progress -d 'How a run shows its progress on stderr: auto (a live display on a terminal, plain lines otherwise), plain, or json (each event of the run\'s log as one JSON line, as `swarm logs --json` prints them)' -r -f -a "auto\t''
plain\t''
json\t''"
complete -c swarm -n "__fish_swarm_using_subcommand runs" -l config -d 'Read this configuration file instead of the user\'s (~/.config/swarm/config.toml)' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand runs" -s q -l quiet -d 'Print nothing on stderr but errors'
complete -c swarm -n "__fish_swarm_using_subcommand runs" -l json -d 'Print JSON on stdout instead of text (each command\'s --help says what)'
complete -c swarm -n "__fish_swarm_using_subcommand runs" -l from-hook -d 'Run as from a git hook: landing defaults to `branch`, so the checkout git is working on is never touched. Also the case when git\'s hook variables (GIT_INDEX_FILE, GIT_DIR) are set'
complete -c swarm -n "__fish_swarm_using_subcommand runs" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c swarm -n "__fish_swarm_using_subcommand show" -l run -d 'The run the task belongs to [default: the newest run]' -r
complete -c swarm -n "__fish_swarm_using_subcommand show" -s C -l directory -d 'Run as if started in DIR' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand show" -l color -d 'Colour what swarm prints on stderr: auto (on a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces colours), always or never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c swarm -n "__fish_swarm_using_subcommand show" -l progress -d 'How a run shows its progress on stderr: auto (a live display on a terminal, plain lines otherwise), plain, or json (each event of the run\'s log as one JSON line, as `swarm logs --json` prints them)' -r -f -a "auto\t''
plain\t''
json\t''"
complete -c swarm -n "__fish_swarm_using_subcommand show" -l config -d 'Read this configuration file instead of the user\'s (~/.config/swarm/config.toml)' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand show" -s q -l quiet -d 'Print nothing on stderr but errors'
complete -c swarm -n "__fish_swarm_using_subcommand show" -l json -d 'Print JSON on stdout instead of text (each command\'s --help says what)'
complete -c swarm -n "__fish_swarm_using_subcommand show" -l from-hook -d 'Run as from a git hook: landing defaults to `branch`, so the checkout git is working on is never touched. Also the case when git\'s hook variables (GIT_INDEX_FILE, GIT_DIR) are set'
complete -c swarm -n "__fish_swarm_using_subcommand show" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c swarm -n "__fish_swarm_using_subcommand status" -s C -l directory -d 'Run as if started in DIR' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand status" -l color -d 'Colour what swarm prints on stderr: auto (on a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces colours), always or never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c swarm -n "__fish_swarm_using_subcommand status" -l progress -d 'How a run shows its progress on stderr: auto (a live display on a terminal, plain lines otherwise), plain, or json (each event of the run\'s log as one JSON line, as `swarm logs --json` prints them)' -r -f -a "auto\t''
plain\t''
json\t''"
complete -c swarm -n "__fish_swarm_using_subcommand status" -l config -d 'Read this configuration file instead of the user\'s (~/.config/swarm/config.toml)' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand status" -s q -l quiet -d 'Print nothing on stderr but errors'
complete -c swarm -n "__fish_swarm_using_subcommand status" -l json -d 'Print JSON on stdout instead of text (each command\'s --help says what)'
complete -c swarm -n "__fish_swarm_using_subcommand status" -l from-hook -d 'Run as from a git hook: landing defaults to `branch`, so the checkout git is working on is never touched. Also the case when git\'s hook variables (GIT_INDEX_FILE, GIT_DIR) are set'
complete -c swarm -n "__fish_swarm_using_subcommand status" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c swarm -n "__fish_swarm_using_subcommand logs" -l tail -d 'Only the last N events' -r
complete -c swarm -n "__fish_swarm_using_subcommand logs" -s C -l directory -d 'Run as if started in DIR' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand logs" -l color -d 'Colour what swarm prints on stderr: auto (on a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces colours), always or never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c swarm -n "__fish_swarm_using_subcommand logs" -l progress -d 'How a run shows its progress on stderr: auto (a live display on a terminal, plain lines otherwise), plain, or json (each event of the run\'s log as one JSON line, as `swarm logs --json` prints them)' -r -f -a "auto\t''
plain\t''
json\t''"
complete -c swarm -n "__fish_swarm_using_subcommand logs" -l config -d 'Read this configuration file instead of the user\'s (~/.config/swarm/config.toml)' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand logs" -l errors -d 'Only failures and errors, with their transcript paths'
complete -c swarm -n "__fish_swarm_using_subcommand logs" -l follow -d 'Keep printing new events until the run ends'
complete -c swarm -n "__fish_swarm_using_subcommand logs" -l path -d 'Print the paths of the event log and transcripts instead of their contents'
complete -c swarm -n "__fish_swarm_using_subcommand logs" -s q -l quiet -d 'Print nothing on stderr but errors'
complete -c swarm -n "__fish_swarm_using_subcommand logs" -l json -d 'Print JSON on stdout instead of text (each command\'s --help says what)'
complete -c swarm -n "__fish_swarm_using_subcommand logs" -l from-hook -d 'Run as from a git hook: landing defaults to `branch`, so the checkout git is working on is never touched. Also the case when git\'s hook variables (GIT_INDEX_FILE, GIT_DIR) are set'
complete -c swarm -n "__fish_swarm_using_subcommand logs" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c swarm -n "__fish_swarm_using_subcommand graph" -l format -d 'Output format' -r -f -a "mermaid\t''
dot\t''"
complete -c swarm -n "__fish_swarm_using_subcommand graph" -s C -l directory -d 'Run as if started in DIR' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand graph" -l color -d 'Colour what swarm prints on stderr: auto (on a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces colours), always or never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c swarm -n "__fish_swarm_using_subcommand graph" -l progress -d 'How a run shows its progress on stderr: auto (a live display on a terminal, plain lines otherwise), plain, or json (each event of the run\'s log as one JSON line, as `swarm logs --json` prints them)' -r -f -a "auto\t''
plain\t''
json\t''"
complete -c swarm -n "__fish_swarm_using_subcommand graph" -l config -d 'Read this configuration file instead of the user\'s (~/.config/swarm/config.toml)' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand graph" -s q -l quiet -d 'Print nothing on stderr but errors'
complete -c swarm -n "__fish_swarm_using_subcommand graph" -l json -d 'Print JSON on stdout instead of text (each command\'s --help says what)'
complete -c swarm -n "__fish_swarm_using_subcommand graph" -l from-hook -d 'Run as from a git hook: landing defaults to `branch`, so the checkout git is working on is never touched. Also the case when git\'s hook variables (GIT_INDEX_FILE, GIT_DIR) are set'
complete -c swarm -n "__fish_swarm_using_subcommand graph" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c swarm -n "__fish_swarm_using_subcommand config" -s j -l jobs -d 'Run at most N tasks at once [default: 4]' -r
complete -c swarm -n "__fish_swarm_using_subcommand config" -l max-writers -d 'Run at most N writers at once [default: the value of --jobs]' -r
complete -c swarm -n "__fish_swarm_using_subcommand config" -l agent -d 'The agent for prompt tasks: auto, openai (built in), claude, codex, a profile from the configuration, exec:CMD (CMD run with `sh -c`, prompt on stdin, result on stdout), or acp:CMD (CMD run with `sh -c`, spoken to in the Agent Client Protocol) [default: auto]' -r
complete -c swarm -n "__fish_swarm_using_subcommand config" -l model -d 'The model of the built-in agent and the planner (else SWARM_MODEL) [default: gpt-4o-mini]' -r
complete -c swarm -n "__fish_swarm_using_subcommand config" -l api-base -d 'The OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (else SWARM_API_BASE, OPENAI_BASE_URL) [default: https://api.openai.com/v1]. The key comes from SWARM_API_KEY or OPENAI_API_KEY only' -r
complete -c swarm -n "__fish_swarm_using_subcommand config" -l request-timeout -d 'Give up on a model request that has not answered after this long, and retry it [default: 5m]' -r
complete -c swarm -n "__fish_swarm_using_subcommand config" -l endpoint-wait -d 'When the model endpoint stops answering (connections refused or timing out, several in a row): how long new attempts wait while swarm checks it every few seconds, before the run stops, resumable (exit 75); 0 stops at once [default: 5m]' -r
complete -c swarm -n "__fish_swarm_using_subcommand config" -l max-turns -d 'The built-in agent\'s cap on model turns per attempt [default: 40]' -r
complete -c swarm -n "__fish_swarm_using_subcommand config" -l max-task-tokens -d 'The built-in agent\'s cap on tokens per attempt [default: 400000]' -r
complete -c swarm -n "__fish_swarm_using_subcommand config" -l budget-tokens -d 'Once the run\'s tasks have used N tokens in all, start nothing new: running tasks finish and finished writers are merged, then the run stops, resumable (exit 75); resume it with a larger --budget-tokens [default: no budget]' -r
complete -c swarm -n "__fish_swarm_using_subcommand config" -l allow-program -d 'Let the built-in agent run PROGRAM (no shell; repeat for several)' -r
complete -c swarm -n "__fish_swarm_using_subcommand config" -l task-timeout -d 'Stop an attempt after this long (e.g. 90s, 20m, 1h) [default: 30m]' -r
complete -c swarm -n "__fish_swarm_using_subcommand config" -l stall-timeout -d 'Stop an attempt as hung when it writes nothing (stdout or stderr) for DURATION; it counts as a failed attempt, like a timeout. For agents that show progress as they go (codex --json, scripts that log); Claude\'s JSON output, for one, comes only at the end [default: off]' -r
complete -c swarm -n "__fish_swarm_using_subcommand config" -l kill-grace -d 'How long a stopped attempt (a timeout, a hang, Ctrl-C) has between SIGTERM and SIGKILL to clean up; 0 kills at once [default: 2s]' -r
complete -c swarm -n "__fish_swarm_using_subcommand config" -l retries -d 'Retry a failed attempt up to N times, with backoff [default: 1]' -r
complete -c swarm -n "__fish_swarm_using_subcommand config" -l check -d 'Verify each writer with CMD (run with `sh -c` in its checkout) before it is merged' -r
complete -c swarm -n "__fish_swarm_using_subcommand config" -l final-out -d 'Write the reducer\'s result and the run summary to FILE. With several goals: one section per goal (its reducer\'s result), then one run summary with the goal graph and the task graph' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand config" -l final-out-dir -d 'With several goals, also write one report per goal to DIR/<goal id>.md (its section and its tasks); DIR is created if needed' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand config" -l base -d 'Start the run from REV [default: HEAD]' -r
complete -c swarm -n "__fish_swarm_using_subcommand config" -l land -d 'What to do with the finished integration branch [default: auto]' -r -f -a "auto\t'Fast-forward the user\'s branch when it is clean and still at the base; else keep the branch'
branch\t'Always keep the integration branch and say how to take it'
none\t'Keep the integration branch and say nothing about it'"
complete -c swarm -n "__fish_swarm_using_subcommand config" -l worktree-dir -d 'Put task checkouts and snapshots under DIR [default: the user cache dir]' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand config" -l on-escalate -d 'Run CMD once per escalation (parked branch), with the details as JSON on stdin' -r
complete -c swarm -n "__fish_swarm_using_subcommand config" -s C -l directory -d 'Run as if started in DIR' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand config" -l color -d 'Colour what swarm prints on stderr: auto (on a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces colours), always or never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c swarm -n "__fish_swarm_using_subcommand config" -l progress -d 'How a run shows its progress on stderr: auto (a live display on a terminal, plain lines otherwise), plain, or json (each event of the run\'s log as one JSON line, as `swarm logs --json` prints them)' -r -f -a "auto\t''
plain\t''
json\t''"
complete -c swarm -n "__fish_swarm_using_subcommand config" -l config -d 'Read this configuration file instead of the user\'s (~/.config/swarm/config.toml)' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand config" -l resolve-conflicts -d 'Before parking a conflicting writer, give its agent one attempt at resolving the conflict (in a fresh checkout holding the conflicted merge; checked like any writer)'
complete -c swarm -n "__fish_swarm_using_subcommand config" -l fresh-retries -d 'Start every retry afresh. Without it, a retry after a timeout, a usage-limit pause, an interruption or a crash continues the Claude or Codex session of the attempt it follows, in the same checkout, so the work already paid for is not redone'
complete -c swarm -n "__fish_swarm_using_subcommand config" -s q -l quiet -d 'Print nothing on stderr but errors'
complete -c swarm -n "__fish_swarm_using_subcommand config" -l json -d 'Print JSON on stdout instead of text (each command\'s --help says what)'
complete -c swarm -n "__fish_swarm_using_subcommand config" -l from-hook -d 'Run as from a git hook: landing defaults to `branch`, so the checkout git is working on is never touched. Also the case when git\'s hook variables (GIT_INDEX_FILE, GIT_DIR) are set'
complete -c swarm -n "__fish_swarm_using_subcommand config" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and not __fish_seen_subcommand_from add list rm run help" -s C -l directory -d 'Run as if started in DIR' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand queue; and not __fish_seen_subcommand_from add list rm run help" -l color -d 'Colour what swarm prints on stderr: auto (on a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces colours), always or never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c swarm -n "__fish_swarm_using_subcommand queue; and not __fish_seen_subcommand_from add list rm run help" -l progress -d 'How a run shows its progress on stderr: auto (a live display on a terminal, plain lines otherwise), plain, or json (each event of the run\'s log as one JSON line, as `swarm logs --json` prints them)' -r -f -a "auto\t''
plain\t''
json\t''"
complete -c swarm -n "__fish_swarm_using_subcommand queue; and not __fish_seen_subcommand_from add list rm run help" -l config -d 'Read this configuration file instead of the user\'s (~/.config/swarm/config.toml)' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand queue; and not __fish_seen_subcommand_from add list rm run help" -s q -l quiet -d 'Print nothing on stderr but errors'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and not __fish_seen_subcommand_from add list rm run help" -l json -d 'Print JSON on stdout instead of text (each command\'s --help says what)'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and not __fish_seen_subcommand_from add list rm run help" -l from-hook -d 'Run as from a git hook: landing defaults to `branch`, so the checkout git is working on is never touched. Also the case when git\'s hook variables (GIT_INDEX_FILE, GIT_DIR) are set'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and not __fish_seen_subcommand_from add list rm run help" -s h -l help -d 'Print help'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and not __fish_seen_subcommand_from add list rm run help" -f -a "add" -d 'Add a goal to the queue (the words are joined with spaces) and print its number'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and not __fish_seen_subcommand_from add list rm run help" -f -a "list" -d 'List the goals waiting in the queue and those a run has taken and not finished. A goal leaves the queue when the run that took it finishes'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and not __fish_seen_subcommand_from add list rm run help" -f -a "rm" -d 'Remove a goal that no run has taken yet'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and not __fish_seen_subcommand_from add list rm run help" -f -a "run" -d 'Run every queued goal as one multi-goal run; goals added while it runs join it (and the dependency pass) before it ends'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and not __fish_seen_subcommand_from add list rm run help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from add" -s C -l directory -d 'Run as if started in DIR' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from add" -l color -d 'Colour what swarm prints on stderr: auto (on a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces colours), always or never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from add" -l progress -d 'How a run shows its progress on stderr: auto (a live display on a terminal, plain lines otherwise), plain, or json (each event of the run\'s log as one JSON line, as `swarm logs --json` prints them)' -r -f -a "auto\t''
plain\t''
json\t''"
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from add" -l config -d 'Read this configuration file instead of the user\'s (~/.config/swarm/config.toml)' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from add" -s q -l quiet -d 'Print nothing on stderr but errors'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from add" -l json -d 'Print JSON on stdout instead of text (each command\'s --help says what)'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from add" -l from-hook -d 'Run as from a git hook: landing defaults to `branch`, so the checkout git is working on is never touched. Also the case when git\'s hook variables (GIT_INDEX_FILE, GIT_DIR) are set'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from add" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from list" -s C -l directory -d 'Run as if started in DIR' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from list" -l color -d 'Colour what swarm prints on stderr: auto (on a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces colours), always or never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from list" -l progress -d 'How a run shows its progress on stderr: auto (a live display on a terminal, plain lines otherwise), plain, or json (each event of the run\'s log as one JSON line, as `swarm logs --json` prints them)' -r -f -a "auto\t''
plain\t''
json\t''"
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from list" -l config -d 'Read this configuration file instead of the user\'s (~/.config/swarm/config.toml)' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from list" -s q -l quiet -d 'Print nothing on stderr but errors'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from list" -l json -d 'Print JSON on stdout instead of text (each command\'s --help says what)'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from list" -l from-hook -d 'Run as from a git hook: landing defaults to `branch`, so the checkout git is working on is never touched. Also the case when git\'s hook variables (GIT_INDEX_FILE, GIT_DIR) are set'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from rm" -s C -l directory -d 'Run as if started in DIR' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from rm" -l color -d 'Colour what swarm prints on stderr: auto (on a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces colours), always or never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from rm" -l progress -d 'How a run shows its progress on stderr: auto (a live display on a terminal, plain lines otherwise), plain, or json (each event of the run\'s log as one JSON line, as `swarm logs --json` prints them)' -r -f -a "auto\t''
plain\t''
json\t''"
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from rm" -l config -d 'Read this configuration file instead of the user\'s (~/.config/swarm/config.toml)' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from rm" -s q -l quiet -d 'Print nothing on stderr but errors'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from rm" -l json -d 'Print JSON on stdout instead of text (each command\'s --help says what)'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from rm" -l from-hook -d 'Run as from a git hook: landing defaults to `branch`, so the checkout git is working on is never touched. Also the case when git\'s hook variables (GIT_INDEX_FILE, GIT_DIR) are set'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from rm" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -s j -l jobs -d 'Run at most N tasks at once [default: 4]' -r
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l max-writers -d 'Run at most N writers at once [default: the value of --jobs]' -r
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l agent -d 'The agent for prompt tasks: auto, openai (built in), claude, codex, a profile from the configuration, exec:CMD (CMD run with `sh -c`, prompt on stdin, result on stdout), or acp:CMD (CMD run with `sh -c`, spoken to in the Agent Client Protocol) [default: auto]' -r
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l model -d 'The model of the built-in agent and the planner (else SWARM_MODEL) [default: gpt-4o-mini]' -r
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l api-base -d 'The OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (else SWARM_API_BASE, OPENAI_BASE_URL) [default: https://api.openai.com/v1]. The key comes from SWARM_API_KEY or OPENAI_API_KEY only' -r
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l request-timeout -d 'Give up on a model request that has not answered after this long, and retry it [default: 5m]' -r
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l endpoint-wait -d 'When the model endpoint stops answering (connections refused or timing out, several in a row): how long new attempts wait while swarm checks it every few seconds, before the run stops, resumable (exit 75); 0 stops at once [default: 5m]' -r
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l max-turns -d 'The built-in agent\'s cap on model turns per attempt [default: 40]' -r
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l max-task-tokens -d 'The built-in agent\'s cap on tokens per attempt [default: 400000]' -r
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l budget-tokens -d 'Once the run\'s tasks have used N tokens in all, start nothing new: running tasks finish and finished writers are merged, then the run stops, resumable (exit 75); resume it with a larger --budget-tokens [default: no budget]' -r
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l allow-program -d 'Let the built-in agent run PROGRAM (no shell; repeat for several)' -r
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l task-timeout -d 'Stop an attempt after this long (e.g. 90s, 20m, 1h) [default: 30m]' -r
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l stall-timeout -d 'Stop an attempt as hung when it writes nothing (stdout or stderr) for DURATION; it counts as a failed attempt, like a timeout. For agents that show progress as they go (codex --json, scripts that log); Claude\'s JSON output, for one, comes only at the end [default: off]' -r
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l kill-grace -d 'How long a stopped attempt (a timeout, a hang, Ctrl-C) has between SIGTERM and SIGKILL to clean up; 0 kills at once [default: 2s]' -r
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l retries -d 'Retry a failed attempt up to N times, with backoff [default: 1]' -r
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l check -d 'Verify each writer with CMD (run with `sh -c` in its checkout) before it is merged' -r
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l final-out -d 'Write the reducer\'s result and the run summary to FILE. With several goals: one section per goal (its reducer\'s result), then one run summary with the goal graph and the task graph' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l final-out-dir -d 'With several goals, also write one report per goal to DIR/<goal id>.md (its section and its tasks); DIR is created if needed' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l base -d 'Start the run from REV [default: HEAD]' -r
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l land -d 'What to do with the finished integration branch [default: auto]' -r -f -a "auto\t'Fast-forward the user\'s branch when it is clean and still at the base; else keep the branch'
branch\t'Always keep the integration branch and say how to take it'
none\t'Keep the integration branch and say nothing about it'"
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l worktree-dir -d 'Put task checkouts and snapshots under DIR [default: the user cache dir]' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l on-escalate -d 'Run CMD once per escalation (parked branch), with the details as JSON on stdin' -r
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -s C -l directory -d 'Run as if started in DIR' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l color -d 'Colour what swarm prints on stderr: auto (on a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces colours), always or never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l progress -d 'How a run shows its progress on stderr: auto (a live display on a terminal, plain lines otherwise), plain, or json (each event of the run\'s log as one JSON line, as `swarm logs --json` prints them)' -r -f -a "auto\t''
plain\t''
json\t''"
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l config -d 'Read this configuration file instead of the user\'s (~/.config/swarm/config.toml)' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l resolve-conflicts -d 'Before parking a conflicting writer, give its agent one attempt at resolving the conflict (in a fresh checkout holding the conflicted merge; checked like any writer)'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l fresh-retries -d 'Start every retry afresh. Without it, a retry after a timeout, a usage-limit pause, an interruption or a crash continues the Claude or Codex session of the attempt it follows, in the same checkout, so the work already paid for is not redone'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -s q -l quiet -d 'Print nothing on stderr but errors'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l json -d 'Print JSON on stdout instead of text (each command\'s --help says what)'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -l from-hook -d 'Run as from a git hook: landing defaults to `branch`, so the checkout git is working on is never touched. Also the case when git\'s hook variables (GIT_INDEX_FILE, GIT_DIR) are set'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from help" -f -a "add" -d 'Add a goal to the queue (the words are joined with spaces) and print its number'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from help" -f -a "list" -d 'List the goals waiting in the queue and those a run has taken and not finished. A goal leaves the queue when the run that took it finishes'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from help" -f -a "rm" -d 'Remove a goal that no run has taken yet'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from help" -f -a "run" -d 'Run every queued goal as one multi-goal run; goals added while it runs join it (and the dependency pass) before it ends'
complete -c swarm -n "__fish_swarm_using_subcommand queue; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c swarm -n "__fish_swarm_using_subcommand gc" -s C -l directory -d 'Run as if started in DIR' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand gc" -l color -d 'Colour what swarm prints on stderr: auto (on a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces colours), always or never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c swarm -n "__fish_swarm_using_subcommand gc" -l progress -d 'How a run shows its progress on stderr: auto (a live display on a terminal, plain lines otherwise), plain, or json (each event of the run\'s log as one JSON line, as `swarm logs --json` prints them)' -r -f -a "auto\t''
plain\t''
json\t''"
complete -c swarm -n "__fish_swarm_using_subcommand gc" -l config -d 'Read this configuration file instead of the user\'s (~/.config/swarm/config.toml)' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand gc" -l dry-run -d 'List what would be removed, remove nothing'
complete -c swarm -n "__fish_swarm_using_subcommand gc" -s q -l quiet -d 'Print nothing on stderr but errors'
complete -c swarm -n "__fish_swarm_using_subcommand gc" -l json -d 'Print JSON on stdout instead of text (each command\'s --help says what)'
complete -c swarm -n "__fish_swarm_using_subcommand gc" -l from-hook -d 'Run as from a git hook: landing defaults to `branch`, so the checkout git is working on is never touched. Also the case when git\'s hook variables (GIT_INDEX_FILE, GIT_DIR) are set'
complete -c swarm -n "__fish_swarm_using_subcommand gc" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c swarm -n "__fish_swarm_using_subcommand completions" -s C -l directory -d 'Run as if started in DIR' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand completions" -l color -d 'Colour what swarm prints on stderr: auto (on a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces colours), always or never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c swarm -n "__fish_swarm_using_subcommand completions" -l progress -d 'How a run shows its progress on stderr: auto (a live display on a terminal, plain lines otherwise), plain, or json (each event of the run\'s log as one JSON line, as `swarm logs --json` prints them)' -r -f -a "auto\t''
plain\t''
json\t''"
complete -c swarm -n "__fish_swarm_using_subcommand completions" -l config -d 'Read this configuration file instead of the user\'s (~/.config/swarm/config.toml)' -r -F
complete -c swarm -n "__fish_swarm_using_subcommand completions" -s q -l quiet -d 'Print nothing on stderr but errors'
complete -c swarm -n "__fish_swarm_using_subcommand completions" -l json -d 'Print JSON on stdout instead of text (each command\'s --help says what)'
complete -c swarm -n "__fish_swarm_using_subcommand completions" -l from-hook -d 'Run as from a git hook: landing defaults to `branch`, so the checkout git is working on is never touched. Also the case when git\'s hook variables (GIT_INDEX_FILE, GIT_DIR) are set'
complete -c swarm -n "__fish_swarm_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c swarm -n "__fish_swarm_using_subcommand help; and not __fish_seen_subcommand_from run resume runs show status logs graph config queue gc completions help" -f -a "run" -d 'Run a task file (JSONL, one task per line)'
complete -c swarm -n "__fish_swarm_using_subcommand help; and not __fish_seen_subcommand_from run resume runs show status logs graph config queue gc completions help" -f -a "resume" -d 'Continue an interrupted run (the newest unfinished one by default)'
complete -c swarm -n "__fish_swarm_using_subcommand help; and not __fish_seen_subcommand_from run resume runs show status logs graph config queue gc completions help" -f -a "runs" -d 'List the runs of this repository, newest first'
complete -c swarm -n "__fish_swarm_using_subcommand help; and not __fish_seen_subcommand_from run resume runs show status logs graph config queue gc completions help" -f -a "show" -d 'Show one task of a run: its spec, status, attempts, result, changed files and transcript'
complete -c swarm -n "__fish_swarm_using_subcommand help; and not __fish_seen_subcommand_from run resume runs show status logs graph config queue gc completions help" -f -a "status" -d 'Show the tasks of a run (the newest by default)'
complete -c swarm -n "__fish_swarm_using_subcommand help; and not __fish_seen_subcommand_from run resume runs show status logs graph config queue gc completions help" -f -a "logs" -d 'Show a run\'s event log (the newest run by default)'
complete -c swarm -n "__fish_swarm_using_subcommand help; and not __fish_seen_subcommand_from run resume runs show status logs graph config queue gc completions help" -f -a "graph" -d 'Print a run\'s or a task file\'s DAG'
complete -c swarm -n "__fish_swarm_using_subcommand help; and not __fish_seen_subcommand_from run resume runs show status logs graph config queue gc completions help" -f -a "config" -d 'Show the effective settings and where each came from (flags, SWARM_* variables, .swarm.toml, the user\'s config file, defaults), and the agent profiles'
complete -c swarm -n "__fish_swarm_using_subcommand help; and not __fish_seen_subcommand_from run resume runs show status logs graph config queue gc completions help" -f -a "queue" -d 'A durable queue of goals in the repository\'s board, drained as one multi-goal run'
complete -c swarm -n "__fish_swarm_using_subcommand help; and not __fish_seen_subcommand_from run resume runs show status logs graph config queue gc completions help" -f -a "gc" -d 'Remove the checkouts of finished tasks and the deps\' files killed runs left behind; a branch with unmerged commits is never deleted'
complete -c swarm -n "__fish_swarm_using_subcommand help; and not __fish_seen_subcommand_from run resume runs show status logs graph config queue gc completions help" -f -a "completions" -d 'Print a shell completion script'
complete -c swarm -n "__fish_swarm_using_subcommand help; and not __fish_seen_subcommand_from run resume runs show status logs graph config queue gc completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c swarm -n "__fish_swarm_using_subcommand help; and __fish_seen_subcommand_from queue" -f -a "add" -d 'Add a goal to the queue (the words are joined with spaces) and print its number'
complete -c swarm -n "__fish_swarm_using_subcommand help; and __fish_seen_subcommand_from queue" -f -a "list" -d 'List the goals waiting in the queue and those a run has taken and not finished. A goal leaves the queue when the run that took it finishes'
complete -c swarm -n "__fish_swarm_using_subcommand help; and __fish_seen_subcommand_from queue" -f -a "rm" -d 'Remove a goal that no run has taken yet'
complete -c swarm -n "__fish_swarm_using_subcommand help; and __fish_seen_subcommand_from queue" -f -a "run" -d 'Run every queued goal as one multi-goal run; goals added while it runs join it (and the dependency pass) before it ends'
