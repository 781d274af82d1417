"""What a run knows of the whole project: settings from the configuration, setup.py's
extensions, the torch floor, where the helper goes; hands Settings to every file's check."""
