complete --keep-order --exclusive --command swarm --arguments "(COMPLETE=fish swarm -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
