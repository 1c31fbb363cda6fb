"""The plugin's tests as they are (its own ``Elastic``): the outcome to compare kfdefaults' with."""
