// MQTT publishing: see the publishing helper task.
