// /etc/collectord.conf: see the configuration helper task.
