"""What each task declares (dlbench.tasks.TASKS) is what its module and the record schema have."""
from dlbench.tasks import TASKS, load


def test_a_tasks_record_blocks_are_its_modules_and_the_record_schemas(record_schema):
    for name, task in TASKS.items():
        assert hasattr(load(name), "record_blocks") == bool(task.record_blocks), name
        assert set(task.record_blocks) <= set(record_schema["properties"]), name
