from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("shop", "0002_stock_title_index"),
    ]

    # A non-null field added to a table with rows: ADD COLUMN ... DEFAULT true NOT NULL, then DROP DEFAULT.
    operations = [
        migrations.AddField(model_name="seller", name="active", field=models.BooleanField(default=True)),
    ]
