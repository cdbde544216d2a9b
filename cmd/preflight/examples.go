package main

// examples is each command's Examples: block, by its path below preflight
// ("kube policy" for a subcommand) (cobra's Example field),
// printed by --help and on its page of the CLI reference. Every line is a
// command a person would type as it stands, with its purpose after #,
// indented by two spaces as cobra prints it.
var examples = map[string]string{
	"check": `  preflight check /data                       # report and exit code by verdict
  preflight check --deep /data                # also the database's health
  preflight check --format json /data /config # the JSON report
  preflight check --container app /data       # /data as container app sees it
  preflight --mountinfo saved.txt check /data # against a table saved elsewhere`,
	"mounts": `  preflight mounts                      # every mount with its class
  preflight mounts --format json /data  # the mount holding /data`,
	"run": `  preflight run --data-dir /data -- /app/server          # as an ENTRYPOINT
  preflight run --data-dir /data --on-unsafe fail -- /app/server
  preflight run --data-dir /data --on-unsafe convert -- /app/server`,
	"writers": `  preflight writers --volume app-data     # who mounts the volume read-write
  preflight writers --host-path /srv/app  # who binds it (or above or in it)`,
	"convert": `  preflight convert --dry-run /data/app.db   # what it would do, nothing changed
  preflight convert /data/app.db             # WAL -> DELETE, with a backup
  preflight convert --to wal /data/app.db    # back to WAL on a local filesystem`,
	"compose": `  preflight compose                          # findings, suggested rewrites
  preflight compose --diff                   # the rewrite as a unified diff
  preflight compose --write                  # edit the files (FILE.bak first)
  preflight compose --check --platform desktop --fail-on warn   # a CI gate`,
	"migrate": `  preflight migrate --from /from --to /to    # copy into an empty dir, verified`,
	"kube": `  preflight kube -f deploy/
  helm template kuma ./chart | preflight kube -f -
  preflight kube -f deploy/ --format sarif > kube.sarif`,
	"audit": `  preflight audit                    # every container of this engine
  preflight audit --format json      # the same as JSON`,
	"locks": `  preflight locks /data/app.db               # who holds which lock now
  preflight locks --watch 10s /data/app.db   # and for how long`,
	"bundle":  `  preflight bundle /data -o bug.tar.gz --redact   # for a bug report`,
	"recover": `  preflight recover /data/app.db --to /data/app.db.recovered`,
	"kube policy": `  preflight kube policy -n vault | kubectl apply -f -   # refuse in namespace vault
  preflight kube policy --action warn --name preflight-warn -n lab > policy.yaml`,
	"kube audit": `  preflight kube audit                 # the cluster of the current kubeconfig
  preflight kube audit --format json`,
	"explain": `  preflight explain wal-on-cross-vm`,
}

// rootExample is the Examples: of preflight --help.
const rootExample = `  preflight check /data                          # is /data safe?
  preflight run --data-dir /data -- /app/server  # as an ENTRYPOINT
  preflight compose                              # risky mounts of a project
  preflight explain wal-on-cross-vm              # what a finding means, its fix`

// builtinExamples are the Examples: of cobra's own commands.
var builtinExamples = map[string]string{
	"help": `  preflight help check`,
	"completion": `  preflight completion bash > /etc/bash_completion.d/preflight
  preflight completion zsh > "${fpath[1]}/_preflight"`,
}
