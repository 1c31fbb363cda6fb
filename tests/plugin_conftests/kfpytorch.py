"""Put into the folder of flytekitplugins-kfpytorch's own tests (``tests/plugin_suites.py``, as its conftest.py): the plugin's
``Elastic`` is kfdefaults', so that every test that builds one builds kfdefaults' drop-in instead."""

import os

import flytekitplugins.kfpytorch as plugin
import flytekitplugins.kfpytorch.task as plugin_task

import kfdefaults.flytekit as adapter

plugin.Elastic = plugin_task.Elastic = adapter.Elastic
os.environ.pop("KFDEFAULTS_PLATFORM_PATH", None)
os.environ.pop("KFDEFAULTS_TEAM_PATH", None)
