from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("shop", "0001_initial"),
    ]

    operations = [
        migrations.AddField(model_name="product", name="stock", field=models.IntegerField(null=True)),
        migrations.AlterField(model_name="product", name="title", field=models.CharField(db_index=True, max_length=300)),
        migrations.AddIndex(model_name="product", index=models.Index(fields=["seller", "price"], name="product_seller_price")),
    ]
