# podpath: shell settings for the learner's terminal on a node.

# Every command goes to the history file as soon as it runs, with its time,
# so a lab step can check that it was run here.
HISTFILE=/root/.bash_history
HISTSIZE=10000
HISTFILESIZE=100000
HISTTIMEFORMAT='%F %T '
export HISTFILE HISTSIZE HISTFILESIZE HISTTIMEFORMAT
if [ -n "${BASH_VERSION:-}" ]; then
  shopt -s histappend
  PROMPT_COMMAND='history -a'
fi

# The control plane has an admin kubeconfig; workers do not, so kubectl
# there dials localhost:8080, as on a real cluster built by kubeadm.
if [ -r /etc/kubernetes/admin.conf ]; then
  export KUBECONFIG=/etc/kubernetes/admin.conf
fi

# ctr repeats containerd's deprecation notices before every command's output;
# the one these hosts raise (cgroup v1: the host's, not the lab's) is noise in
# a lesson. ctr deprecations list still shows them.
export CONTAINERD_SUPPRESS_DEPRECATION_WARNINGS=1

alias k=kubectl
if [ -n "${BASH_VERSION:-}" ] && [ -r /usr/share/bash-completion/completions/kubectl ]; then
  . /usr/share/bash-completion/completions/kubectl
  complete -o default -F __start_kubectl k
fi
